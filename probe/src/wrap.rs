//! Word wrapping for every text view (the summary and advice, `explain`, the
//! terminal timeline's panels), on the `textwrap` crate: greedy (first fit),
//! at ASCII spaces only, so a line breaks where a reader expects and nowhere
//! else; and [`capitalized`], for a lower-case lead-in that starts a sentence.

use textwrap::{Options, WordSeparator, WordSplitter, WrapAlgorithm};

/// What each line of a wrapped text starts with, and whether a word longer
/// than a line is cut (otherwise it stands alone on a longer line).
pub struct Layout<'a> {
    /// The first line's start.
    pub first: &'a str,
    /// Every other line's start.
    pub rest: &'a str,
    /// Cut words longer than a line.
    pub cut_long_words: bool,
}

/// `text` wrapped to lines of at most `width` columns (display width), each
/// starting as `layout` says, without trailing spaces; no lines for a text
/// without words.
pub fn wrap_lines(text: &str, width: usize, layout: &Layout<'_>) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let options = Options::new(width.max(1))
        .initial_indent(layout.first)
        .subsequent_indent(layout.rest)
        .break_words(layout.cut_long_words)
        .word_separator(WordSeparator::AsciiSpace)
        .word_splitter(WordSplitter::NoHyphenation)
        .wrap_algorithm(WrapAlgorithm::FirstFit);
    textwrap::wrap(text, options)
        .into_iter()
        .map(|line| line.trim_end().to_owned())
        .collect()
}

/// The units a number is kept on one line with ("1.6 ms", not "1.6" / "ms").
const UNITS: [&str; 10] = [
    "ns", "µs", "ms", "s", "B", "KiB", "MiB", "GiB", "MB/s", "GB/s",
];

/// Joins each number and the unit after it with `glue`, so that wrapping
/// keeps them together; words are separated by single spaces.
fn glue_units(text: &str, glue: char) -> String {
    let mut out = String::with_capacity(text.len());
    let mut prev_is_number = false;
    for (i, w) in text.split_whitespace().enumerate() {
        let bare = w.trim_end_matches([',', '.', ';', ':', ')']);
        if i > 0 {
            out.push(if prev_is_number && UNITS.contains(&bare) {
                glue
            } else {
                ' '
            });
        }
        out.push_str(w);
        prev_is_number = w.ends_with(|c: char| c.is_ascii_digit());
    }
    out
}

/// Appends `text` to `out` wrapped at `width` columns (at least 20), every
/// line starting with `indent` (continuation lines with two more spaces),
/// numbers kept with their units: the summary's and the advice's prose.
pub fn push_prose(out: &mut String, text: &str, width: usize, indent: &str) {
    // A character no text of ours holds stands for the space between a
    // number and its unit while wrapping.
    const GLUE: char = '\u{E000}';
    let glued = glue_units(text, GLUE);
    let rest = format!("{indent}  ");
    let layout = Layout {
        first: indent,
        rest: &rest,
        cut_long_words: false,
    };
    for line in wrap_lines(&glued, width.max(20), &layout) {
        out.push_str(&line.replace(GLUE, " "));
        out.push('\n');
    }
}

/// The text with its first letter in upper case (the summary's lead-ins and the parts' names
/// are lower case; a sentence they start is not).
pub fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_keeps_numbers_with_their_units_and_indents_continuations() {
        let mut s = String::new();
        push_prose(&mut s, "one two three four five six", 20, "  ");
        assert_eq!(s, "  one two three four\n    five six\n");
        let mut s = String::new();
        push_prose(&mut s, "the tail is now 1.6 ms, then 2 MiB.", 20, "");
        assert_eq!(s, "the tail is now\n  1.6 ms, then\n  2 MiB.\n");
        let mut s = String::new();
        push_prose(&mut s, "   ", 20, "");
        assert_eq!(s, "");
    }

    #[test]
    fn long_words_are_cut_or_left_whole() {
        let cut = Layout {
            first: "> ",
            rest: "  ",
            cut_long_words: true,
        };
        assert_eq!(
            wrap_lines("alpha beta gamma delta epsilon zeta", 14, &cut),
            ["> alpha beta", "  gamma delta", "  epsilon zeta"]
        );
        let lines = wrap_lines(
            &"x".repeat(30),
            10,
            &Layout {
                first: "",
                rest: "",
                cut_long_words: true,
            },
        );
        assert_eq!(lines, ["x".repeat(10), "x".repeat(10), "x".repeat(10)]);
        let whole = Layout {
            first: "",
            rest: "",
            cut_long_words: false,
        };
        assert_eq!(
            wrap_lines(&format!("a {} b", "y".repeat(12)), 8, &whole),
            ["a", &"y".repeat(12), "b"]
        );
    }

    #[test]
    fn width_is_display_width() {
        let layout = Layout {
            first: "",
            rest: "",
            cut_long_words: false,
        };
        // "µs" is two bytes and one column.
        assert_eq!(wrap_lines("12 µs 34 µs", 11, &layout), ["12 µs 34 µs"]);
    }
}
