//! Helpers shared by the integration tests: strict parsing of the report
//! and the checks every report must pass.

#![allow(dead_code)]

use std::path::Path;

/// Parses the report as XML (it is written to be well-formed XHTML-style
/// HTML: void elements closed, attributes quoted, only XML's entities).
pub fn parse(html: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    match roxmltree::Document::parse_with_options(html, opts) {
        Ok(d) => d,
        Err(e) => {
            let pos = e.pos();
            let line = html.lines().nth(pos.row as usize - 1).unwrap_or("");
            let from = (pos.col as usize).saturating_sub(120);
            let snippet: String = line.chars().skip(from).take(240).collect();
            panic!("the report is not well-formed: {e}\n…{snippet}…");
        }
    }
}

/// All text of the document (text nodes joined with spaces).
pub fn all_text(doc: &roxmltree::Document<'_>) -> String {
    doc.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The checks every report passes: structure, no active or remote content (images only as
/// inline PNG data), responsive SVG charts.
pub fn check_report(html: &str) -> roxmltree::Document<'_> {
    assert!(html.starts_with("<!DOCTYPE html>"), "no doctype");
    let doc = parse(html);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "html");
    let head = root
        .children()
        .find(|n| n.has_tag_name("head"))
        .expect("a head");
    assert!(head.children().any(|n| n.has_tag_name("title")));
    assert!(head.children().any(|n| n.has_tag_name("style")));
    assert!(head
        .children()
        .any(|n| n.has_tag_name("meta") && n.attribute("name") == Some("viewport")));
    assert!(root.children().any(|n| n.has_tag_name("body")));
    for n in doc.descendants().filter(|n| n.is_element()) {
        let name = n.tag_name().name();
        assert!(
            !matches!(
                name,
                "script" | "iframe" | "link" | "object" | "embed" | "base" | "form"
            ),
            "a <{name}> element in the report"
        );
        // Images only as inline PNG data (the heatmaps), never fetched.
        if name == "img" {
            assert!(
                n.attribute("src")
                    .is_some_and(|s| s.starts_with("data:image/png;base64,")),
                "an <img> that is not an inline PNG: {:?}",
                n.attribute("src")
            );
        }
        for a in n.attributes() {
            assert!(
                !a.name().to_ascii_lowercase().starts_with("on"),
                "an event handler attribute {}",
                a.name()
            );
            let v = a.value().trim_start().to_ascii_lowercase();
            if a.name() != "xmlns" {
                assert!(
                    !(v.starts_with("http:")
                        || v.starts_with("https:")
                        || v.starts_with("//")
                        || v.starts_with("javascript:")),
                    "a remote or script reference: {}=\"{}\"",
                    a.name(),
                    a.value()
                );
            }
        }
    }
    let css: String = doc
        .descendants()
        .filter(|n| n.has_tag_name("style"))
        .filter_map(|n| n.text())
        .collect();
    assert!(
        !css.contains("url(") && !css.contains("@import"),
        "the CSS fetches something"
    );
    for svg in doc.descendants().filter(|n| n.has_tag_name("svg")) {
        assert_eq!(
            svg.attribute("width"),
            Some("100%"),
            "a chart of fixed width"
        );
        assert!(svg.attribute("height").is_none(), "a chart of fixed height");
        assert!(
            svg.attribute("viewBox").is_some(),
            "a chart without viewBox"
        );
        assert!(
            svg.attribute("aria-label").is_some(),
            "a chart without a name"
        );
    }
    doc
}

/// The text of every `<text>` element inside the SVG charts.
pub fn chart_texts(doc: &roxmltree::Document<'_>) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            n.descendants()
                .filter(|t| t.is_text())
                .filter_map(|t| t.text())
                .collect::<String>()
                .trim()
                .to_owned()
        })
        .collect()
}

/// Replaces `from` by `to` in every trace file of a run directory.
pub fn edit_traces(run: &Path, from: &str, to: &str) {
    for e in std::fs::read_dir(run.join("traces")).unwrap() {
        let p = e.unwrap().path();
        let s = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, s.replace(from, to)).unwrap();
    }
}

/// Appends a JSON line to rank `rank`'s trace.
pub fn append_line(run: &Path, rank: u32, line: &str) {
    use std::io::Write;
    let p = run.join("traces").join(format!("rank-{rank}.jsonl"));
    let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
    writeln!(f, "{line}").unwrap();
}
