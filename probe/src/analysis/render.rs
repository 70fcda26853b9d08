//! Text helpers of the terminal reports: human units and word wrapping
//! (from [`crate::units`] and [`crate::wrap`]) and tables that drop their
//! least important columns to fit a width.

use std::fmt::Write as _;

pub use crate::units::{bytes, ns, pct, rate, signed_ns};

pub use crate::wrap::push_prose as wrap;

/// A column of a [`Table`].
pub struct Col {
    /// Header text.
    pub title: &'static str,
    /// Right-aligned (numbers) or left-aligned (names).
    pub right: bool,
    /// 0 is never dropped; larger numbers are dropped first when the table
    /// is too wide.
    pub drop_order: u8,
}

/// Right-aligned numeric column that is dropped in order `d`.
pub const fn num(title: &'static str, d: u8) -> Col {
    Col {
        title,
        right: true,
        drop_order: d,
    }
}

/// Left-aligned column that is dropped in order `d`.
pub const fn text(title: &'static str, d: u8) -> Col {
    Col {
        title,
        right: false,
        drop_order: d,
    }
}

/// A table of strings.
///
/// Hand-written because its one job is not in the table crates: comfy-table
/// and tabled fit a width by wrapping or truncating cells, while these tables
/// drop whole columns, least important first, so that at 80 columns every
/// row still reads on one line (the renderer is some 50 lines).
pub struct Table {
    cols: Vec<Col>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these columns.
    pub fn new(cols: Vec<Col>) -> Table {
        Table {
            cols,
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are empty).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders with `indent`, dropping columns (highest `drop_order` first)
    /// until a line fits `width`.
    pub fn render(&self, out: &mut String, width: usize, indent: &str) {
        let n = self.cols.len();
        let cell = |r: &Vec<String>, c: usize| r.get(c).map_or("", |s| s.as_str()).to_owned();
        let mut widths: Vec<usize> = (0..n)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| cell(r, c).chars().count())
                    .chain(std::iter::once(self.cols[c].title.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut keep = vec![true; n];
        let line_width = |keep: &[bool], widths: &[usize]| {
            let kept = (0..n).filter(|&c| keep[c]);
            indent.chars().count()
                + kept.clone().map(|c| widths[c]).sum::<usize>()
                + 2 * kept.count().saturating_sub(1)
        };
        while line_width(&keep, &widths) > width {
            let victim = (0..n)
                .filter(|&c| keep[c] && self.cols[c].drop_order > 0)
                .max_by_key(|&c| (self.cols[c].drop_order, c));
            match victim {
                Some(c) => keep[c] = false,
                None => break,
            }
        }
        for (c, w) in widths.iter_mut().enumerate() {
            if !keep[c] {
                *w = 0;
            }
        }
        let mut emit = |cells: Vec<String>| {
            let mut line = String::from(indent);
            let mut first = true;
            for c in (0..n).filter(|&c| keep[c]) {
                if !first {
                    line.push_str("  ");
                }
                first = false;
                let v = cells.get(c).map_or("", |s| s.as_str());
                let pad = widths[c].saturating_sub(v.chars().count());
                if self.cols[c].right {
                    let _ = write!(line, "{}{v}", " ".repeat(pad));
                } else {
                    let _ = write!(line, "{v}{}", " ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        };
        emit(self.cols.iter().map(|c| c.title.to_owned()).collect());
        for r in &self.rows {
            emit(r.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(ns(12_345_678.0), "12.3 ms");
        assert_eq!(ns(450_000.0), "450 µs");
        assert_eq!(ns(1_500.0), "1.5 µs");
        assert_eq!(ns(2.5e9), "2.50 s");
        assert_eq!(signed_ns(-7_900_000.0), "−7.9 ms");
        assert_eq!(bytes(4.0 * 1048576.0), "4.0 MiB");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(rate(1.234e9), "1.23 GB/s");
        assert_eq!(pct(0.12), "12%");
    }

    #[test]
    fn tables_drop_columns_to_fit() {
        let mut t = Table::new(vec![text("name", 0), num("a", 2), num("bbbbbbbb", 1)]);
        t.row(vec!["x".into(), "1".into(), "2".into()]);
        let mut wide = String::new();
        t.render(&mut wide, 80, "");
        assert_eq!(wide, "name  a  bbbbbbbb\nx     1         2\n");
        let mut narrow = String::new();
        t.render(&mut narrow, 15, "");
        assert_eq!(narrow, "name  bbbbbbbb\nx            2\n");
    }
}
