extension GalleryAssets {
    static let style = #"""
        :root { --bg: #f6f5f2; --fg: #1d1d1b; --muted: #6b6a66; --accent: #2f6f4f; --danger: #b3261e;
          --tile: 160px; color-scheme: light; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--fg); }
        a { color: var(--accent); }
        .bar { position: sticky; top: 0; z-index: 2; display: flex; gap: .75rem; align-items: center;
          padding: .6rem 1rem; background: #fff; border-bottom: 1px solid #e4e2dc; }
        .brand { font-weight: 700; text-decoration: none; color: var(--fg); }
        #crumb { color: var(--muted); overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
        .spacer { flex: 1; }
        #who { color: var(--muted); font-size: .9em; }
        main { padding: 1rem; max-width: 1400px; margin: 0 auto; }
        button, .button { font: inherit; border: 1px solid #cfcdc6; background: #fff; color: var(--fg);
          border-radius: 8px; padding: .45rem .9rem; cursor: pointer; text-decoration: none; display: inline-block; }
        button.primary, .button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
        button.danger { color: var(--danger); border-color: #e3b6b2; }
        button.quiet { border-color: transparent; }
        form.signin { max-width: 320px; margin: 12vh auto; display: grid; gap: .7rem; background: #fff;
          padding: 1.5rem; border-radius: 12px; border: 1px solid #e4e2dc; }
        form.signin input { font: inherit; padding: .5rem; border: 1px solid #cfcdc6; border-radius: 8px; }
        .error { color: var(--danger); min-height: 1.2em; margin: 0; }
        ul.dbs { list-style: none; padding: 0; display: grid; gap: .5rem; max-width: 480px; }
        ul.dbs a { display: block; padding: .8rem 1rem; background: #fff; border: 1px solid #e4e2dc;
          border-radius: 10px; text-decoration: none; color: var(--fg); }
        .toolbar { display: flex; gap: .75rem; align-items: center; margin-bottom: 1rem; flex-wrap: wrap; }
        .toolbar input[type=file] { display: none; }
        .count { color: var(--muted); }
        .drop { outline: 3px dashed var(--accent); outline-offset: 4px; }
        ul.uploads { list-style: none; padding: 0; margin: 0 0 1rem; display: grid; gap: .35rem; }
        ul.uploads li { display: grid; grid-template-columns: minmax(0, 1fr) 140px 7em; gap: .6rem;
          align-items: center; background: #fff; padding: .35rem .6rem; border-radius: 8px; }
        ul.uploads .name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
        ul.uploads progress { width: 100%; }
        ul.uploads .state { color: var(--muted); font-size: .85em; text-align: right; }
        .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(var(--tile), 1fr)); gap: 6px; }
        .tile { position: relative; aspect-ratio: 1; background: #e4e2dc; border-radius: 6px; overflow: hidden;
          display: block; color: var(--fg); text-decoration: none; }
        .tile img { width: 100%; height: 100%; object-fit: cover; display: block; }
        .tile .label { position: absolute; left: 0; right: 0; bottom: 0; padding: .3rem .45rem; font-size: .8em;
          color: #fff; background: linear-gradient(transparent, rgba(0, 0, 0, .65)); overflow: hidden;
          text-overflow: ellipsis; white-space: nowrap; }
        .tile .kind { position: absolute; inset: 0; display: grid; place-items: center; font-size: 2.2em;
          color: var(--muted); }
        .tile.video .kind { color: #fff; background: #333; }
        .tile:focus-visible { outline: 3px solid var(--accent); }
        .more { text-align: center; color: var(--muted); padding: 1.5rem; }
        #viewer { position: fixed; inset: 0; z-index: 5; background: #111; color: #eee; display: grid;
          grid-template-columns: minmax(0, 1fr) 320px; }
        #viewer[hidden] { display: none; }
        .stage { display: grid; place-items: center; min-height: 0; padding: 1rem; }
        .stage img, .stage video { max-width: 100%; max-height: calc(100vh - 2rem); object-fit: contain; }
        .stage .file { font-size: 4em; }
        .details { background: #1b1b1b; padding: 1rem; overflow: auto; }
        .details h2 { font-size: 1.1em; overflow-wrap: anywhere; }
        .details .nav { display: flex; justify-content: space-between; }
        .details button, .details .button { background: #2a2a2a; color: #eee; border-color: #444; }
        .details button.danger { color: #f2b8b5; }
        #v-meta { color: #aaa; }
        #v-fields { width: 100%; border-collapse: collapse; font-size: .85em; }
        #v-fields td { border-top: 1px solid #333; padding: .3rem; vertical-align: top; overflow-wrap: anywhere; }
        #v-fields td:first-child { color: #aaa; width: 35%; }
        .actions { display: flex; gap: .6rem; justify-content: flex-end; }
        dialog { border: none; border-radius: 12px; padding: 1.2rem; max-width: 90vw; }
        body.welcome main { max-width: 560px; margin: 15vh auto; }
        @media (max-width: 720px) {
          :root { --tile: 105px; }
          main { padding: .5rem; }
          #viewer { grid-template-columns: 1fr; grid-template-rows: minmax(0, 1fr) auto; }
          .details { max-height: 45vh; }
        }

        """#
}
