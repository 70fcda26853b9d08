//! Writing HTML safely: escaping, a small element writer and tables.
//!
//! Every piece of text that can come from outside the report's own code (log
//! lines, commands, program names, parameter names, environment values,
//! messages in traces) goes through [`escape`], directly or through
//! [`Html::text`], [`Html::elem`] and [`Cell::text`]; [`Html::raw`] and
//! [`Cell::markup`] take markup the report itself built. The output is also
//! well-formed XML (void elements are self-closed, attributes quoted), which
//! the tests check with an XML parser.

use std::fmt::Write as _;

/// Most characters of one piece of text written to a report: far more than
/// any legitimate value, few enough that a log line of megabytes cannot
/// bloat the report. Longer text is cut and says how much was left out.
pub const MAX_TEXT_CHARS: usize = 20_000;

/// `s` with `&`, `<`, `>`, `"` and `'` replaced by character references,
/// and the characters [`probe::text::needs_escape`] names (controls,
/// bidirectional overrides, zero-width characters; tab and newline apart)
/// shown as `U+XXXX` (controls are not allowed in XML, and the others would
/// make the text read differently from what it is), cut to
/// [`MAX_TEXT_CHARS`], so it can stand in element content and in quoted
/// attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_TEXT_CHARS) + 8);
    escape_into(&mut out, s);
    out
}

/// [`escape`] appending to `out`.
pub fn escape_into(out: &mut String, s: &str) {
    for (n, (i, c)) in s.char_indices().enumerate() {
        if n == MAX_TEXT_CHARS {
            let _ = write!(out, "… [{} more characters]", s[i..].chars().count());
            return;
        }
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if probe::text::needs_escape(c) || matches!(c, '\u{FFFE}' | '\u{FFFF}') => {
                let _ = write!(out, "U+{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// An HTML fragment being written. Text is escaped; markup is only added
/// through [`Html::raw`] by the report's own code.
#[derive(Debug, Default, Clone)]
pub struct Html {
    buf: String,
}

impl Html {
    /// An empty fragment.
    pub fn new() -> Html {
        Html::default()
    }

    /// Appends text, escaped.
    pub fn text(&mut self, s: &str) -> &mut Html {
        escape_into(&mut self.buf, s);
        self
    }

    /// Appends prose, escaped, with each backquoted span as `<code>` (the summary's, the
    /// advice's and `explain`'s sentences quote code so: "call `model.train()`"). Text with an
    /// odd number of backquotes is appended as it is, escaped.
    pub fn prose(&mut self, s: &str) -> &mut Html {
        if !s.matches('`').count().is_multiple_of(2) {
            return self.text(s);
        }
        for (i, part) in s.split('`').enumerate() {
            if i % 2 == 1 {
                self.buf.push_str("<code>");
                escape_into(&mut self.buf, part);
                self.buf.push_str("</code>");
            } else {
                escape_into(&mut self.buf, part);
            }
        }
        self
    }

    /// Appends markup as it is. Only for markup the report built itself
    /// (its own tags, SVG charts drawn by plotters).
    pub fn raw(&mut self, s: &str) -> &mut Html {
        self.buf.push_str(s);
        self
    }

    /// Opens `tag` with attributes (values escaped).
    pub fn open(&mut self, tag: &str, attrs: &[(&str, &str)]) -> &mut Html {
        self.buf.push('<');
        self.buf.push_str(tag);
        for (k, v) in attrs {
            self.buf.push(' ');
            self.buf.push_str(k);
            self.buf.push_str("=\"");
            escape_into(&mut self.buf, v);
            self.buf.push('"');
        }
        self.buf.push('>');
        self
    }

    /// Closes `tag`.
    pub fn close(&mut self, tag: &str) -> &mut Html {
        self.buf.push_str("</");
        self.buf.push_str(tag);
        self.buf.push('>');
        self
    }

    /// `<tag attrs>text</tag>`, the text escaped.
    pub fn elem(&mut self, tag: &str, attrs: &[(&str, &str)], text: &str) -> &mut Html {
        self.open(tag, attrs).text(text).close(tag)
    }

    /// A `<p>` of escaped text.
    pub fn para(&mut self, text: &str) -> &mut Html {
        self.elem("p", &[], text)
    }

    /// A `<p class="note">` of escaped text.
    pub fn note(&mut self, text: &str) -> &mut Html {
        self.elem("p", &[("class", "note")], text)
    }

    /// A table, wrapped in a horizontally scrolling box for narrow windows.
    pub fn table(&mut self, table: &Table) -> &mut Html {
        table.write(self);
        self
    }

    /// A `<dl>` of label/value pairs (values escaped), in a grid.
    pub fn facts(&mut self, facts: &[(String, String)]) -> &mut Html {
        if facts.is_empty() {
            return self;
        }
        self.open("dl", &[("class", "facts")]);
        for (k, v) in facts {
            self.elem("dt", &[], k).elem("dd", &[], v);
        }
        self.close("dl")
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The markup written so far.
    pub fn as_str(&self) -> &str {
        &self.buf
    }

    /// The markup.
    pub fn finish(self) -> String {
        self.buf
    }
}

/// One table cell: escaped text or the report's own markup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    markup: String,
    numeric: bool,
    class: Option<&'static str>,
}

impl Cell {
    /// A cell of text (escaped).
    pub fn text(s: impl AsRef<str>) -> Cell {
        Cell {
            markup: escape(s.as_ref()),
            numeric: false,
            class: None,
        }
    }

    /// A right-aligned cell of text (escaped), for numbers.
    pub fn num(s: impl AsRef<str>) -> Cell {
        Cell {
            markup: escape(s.as_ref()),
            numeric: true,
            class: None,
        }
    }

    /// A cell of markup the report built itself.
    pub fn markup(s: impl Into<String>) -> Cell {
        Cell {
            markup: s.into(),
            numeric: false,
            class: None,
        }
    }

    /// The same cell with a CSS class (`"best"`, `"bad"`, ...).
    pub fn with_class(mut self, class: &'static str) -> Cell {
        self.class = Some(class);
        self
    }
}

/// A table with a header row; cells are [`Cell`]s.
#[derive(Debug, Clone, Default)]
pub struct Table {
    head: Vec<(String, bool)>,
    rows: Vec<(Vec<Cell>, Option<&'static str>)>,
    caption: Option<String>,
}

impl Table {
    /// A table with these column titles; a title starting with `#` is a
    /// right-aligned (numeric) column, the `#` not shown.
    pub fn new(head: &[&str]) -> Table {
        Table {
            head: head
                .iter()
                .map(|h| match h.strip_prefix('#') {
                    Some(t) => (t.to_owned(), true),
                    None => ((*h).to_owned(), false),
                })
                .collect(),
            rows: Vec::new(),
            caption: None,
        }
    }

    /// Sets a caption (escaped).
    pub fn caption(mut self, caption: impl Into<String>) -> Table {
        self.caption = Some(caption.into());
        self
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push((cells, None));
    }

    /// Adds a row with a CSS class on the `<tr>`.
    pub fn row_with_class(&mut self, cells: Vec<Cell>, class: &'static str) {
        self.rows.push((cells, Some(class)));
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    fn write(&self, h: &mut Html) {
        h.open("div", &[("class", "scroll")]).open("table", &[]);
        if let Some(c) = &self.caption {
            h.elem("caption", &[], c);
        }
        h.open("thead", &[]).open("tr", &[]);
        for (t, numeric) in &self.head {
            if *numeric {
                h.elem("th", &[("class", "num")], t);
            } else {
                h.elem("th", &[], t);
            }
        }
        h.close("tr").close("thead").open("tbody", &[]);
        for (cells, class) in &self.rows {
            match class {
                Some(c) => h.open("tr", &[("class", c)]),
                None => h.open("tr", &[]),
            };
            for (i, cell) in cells.iter().enumerate() {
                let numeric = cell.numeric || self.head.get(i).is_some_and(|c| c.1);
                let class = match (numeric, cell.class) {
                    (true, Some(c)) => format!("num {c}"),
                    (true, None) => "num".to_owned(),
                    (false, Some(c)) => c.to_owned(),
                    (false, None) => String::new(),
                };
                if class.is_empty() {
                    h.open("td", &[]);
                } else {
                    h.open("td", &[("class", &class)]);
                }
                h.raw(&cell.markup).close("td");
            }
            h.close("tr");
        }
        h.close("tbody").close("table").close("div");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_controls() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("a\u{1b}[31mb\tc\n"), "aU+001B[31mb\tc\n");
        assert_eq!(escape("µs → ✓"), "µs → ✓");
        assert_eq!(escape("a\u{202e}b\r\u{200b}"), "aU+202EbU+000DU+200B");
    }

    #[test]
    fn prose_marks_up_quoted_code_and_escapes_the_rest() {
        let mut h = Html::new();
        h.prose("call `model.train()` <now> or `a<b>`");
        assert_eq!(
            h.finish(),
            "call <code>model.train()</code> &lt;now&gt; or <code>a&lt;b&gt;</code>"
        );
        // An unpaired backquote is no code span.
        let mut h = Html::new();
        h.prose("it's `odd <x>");
        assert_eq!(h.finish(), "it&#39;s `odd &lt;x&gt;");
    }

    #[test]
    fn very_long_text_is_cut() {
        let long = "<".repeat(MAX_TEXT_CHARS + 5);
        let e = escape(&long);
        assert!(e.starts_with("&lt;&lt;"));
        assert!(
            e.ends_with("&lt;… [5 more characters]"),
            "{}",
            &e[e.len() - 40..]
        );
        assert_eq!(e.matches("&lt;").count(), MAX_TEXT_CHARS);
    }

    #[test]
    fn tables_escape_text_cells_and_align_numbers() {
        let mut t = Table::new(&["name", "#size"]);
        t.row(vec![Cell::text("<b>"), Cell::text("12 B")]);
        let mut h = Html::new();
        h.table(&t);
        let s = h.finish();
        assert!(s.contains("<td>&lt;b&gt;</td>"), "{s}");
        assert!(s.contains("<td class=\"num\">12 B</td>"), "{s}");
        assert!(s.contains("<th class=\"num\">size</th>"), "{s}");
    }

    #[test]
    fn attributes_are_escaped() {
        let mut h = Html::new();
        h.open("a", &[("title", "\"><script>")]).close("a");
        assert_eq!(h.finish(), "<a title=\"&quot;&gt;&lt;script&gt;\"></a>");
    }
}
