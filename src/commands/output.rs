//! How the commands print text: the width to wrap to and whole blocks.

/// Columns to wrap text to: $COLUMNS when set, else 100.
pub fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&w| w >= 40)
        .unwrap_or(100)
}

/// Prints `text`, ending it with a newline if it lacks one.
pub fn print_block(text: &str) {
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
}
