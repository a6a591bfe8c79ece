import CouchServer

extension QRCode {
    /// The symbol as text for a terminal: each character is two modules stacked (Unicode half blocks),
    /// so that the code is about square in a normal terminal font, with the quiet zone around it.
    ///
    /// A glyph's ink is a dark module. With `colors`, every line is drawn black on bright white (ANSI SGR
    /// 30;107), so the code is dark-on-light whatever the terminal's own colours are; without (not a TTY,
    /// `NO_COLOR`), the ink is the terminal's text colour, right for a light background or a file.
    public func terminalText(colors: Bool) -> String {
        let zone = QRCode.quietZone
        var lines: [String] = []
        var y = -zone
        while y < size + zone {
            var line = colors ? "\u{1B}[30;107m" : ""
            for x in -zone..<(size + zone) {
                switch (isDark(x: x, y: y), isDark(x: x, y: y + 1)) {
                case (false, false): line += " "
                case (true, false): line += "\u{2580}"  // ▀ upper half
                case (false, true): line += "\u{2584}"  // ▄ lower half
                case (true, true): line += "\u{2588}"  // █ full
                }
            }
            if colors { line += "\u{1B}[0m" }
            lines.append(line)
            y += 2
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
