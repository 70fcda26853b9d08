//! Making untrusted text safe to print, for the diagnosis: the shared rules
//! of [`probe::text`] plus the limits and path display `explain` uses.
//!
//! Every string that comes from an input file (log lines, file names, values
//! from a manifest) passes through [`sanitize`] before it is stored in a
//! report, so neither the text rendering nor the JSON ever carries a raw
//! control character (terminal escapes, carriage returns, bidirectional
//! overrides).

use std::path::Path;

pub use probe::text::{clip, sanitize};

/// The longest evidence line kept, in characters.
pub const MAX_EVIDENCE_CHARS: usize = 300;

/// A path as safe display text (lossy for non-UTF-8 names).
pub fn display_path(path: &Path) -> String {
    sanitize(&path.to_string_lossy(), 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_safely() {
        let p = Path::new("logs/rank-0\u{1b}[2J\r.log");
        assert_eq!(display_path(p), "logs/rank-0\\r.log");
        assert_eq!(display_path(Path::new("a\u{202e}b")), "a\\u{202e}b");
    }
}
