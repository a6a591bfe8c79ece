public enum CouchWire {}
