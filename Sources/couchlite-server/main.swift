print("couchlite")
