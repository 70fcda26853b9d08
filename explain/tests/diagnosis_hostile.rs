//! Regressions found by the `explain_log` fuzz target: words that NCCL
//! lines carry into the report (communicator ids, versions) may hold control
//! characters that are not whitespace; the report shows them escaped.

use probe::text::needs_escape;
use probe_explain::{explain_log_bytes, Category, Options};

fn assert_clean(report: &probe_explain::Report) {
    let json = serde_json::to_string(report).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    fn walk(v: &serde_json::Value) {
        match v {
            serde_json::Value::String(s) => {
                assert!(
                    !s.chars().any(needs_escape),
                    "raw control character in {s:?}"
                )
            }
            serde_json::Value::Array(a) => a.iter().for_each(walk),
            serde_json::Value::Object(o) => o.values().for_each(walk),
            _ => {}
        }
    }
    walk(&v);
    let text = report.render_text(100);
    assert!(
        !text.chars().any(|c| c != '\n' && needs_escape(c)),
        "{text:?}"
    );
}

#[test]
fn a_comm_id_with_a_control_character_is_escaped() {
    let log = b"node3:4411:4520 [2] NCCL INFO comm 0x7f11c0 rank 1 nranks 2 cudaDev 2 busId 47000 \
commId 0x55aa\x1c- Init START\n";
    let report = explain_log_bytes("logs/rank-1.stderr", log, &Options::default());
    assert_clean(&report);
    let comm = report.nccl.first().expect("the communicator is summarised");
    assert_eq!(comm.comm_id.as_deref(), Some("0x55aa\\x1c-"));
}

#[test]
fn nccl_versions_with_control_characters_are_escaped_in_the_finding() {
    let log = b"node0:900:900 [0] NCCL INFO NCCL version 2.19\x01\x00+cuda12.1\n\
node1:301:301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n";
    let report = explain_log_bytes("logs/rank-1.stderr", log, &Options::default());
    assert_clean(&report);
    let f = report
        .findings
        .iter()
        .find(|f| f.category == Category::NcclVersionMismatch)
        .expect("the version mismatch is found");
    assert!(
        f.explanation.contains("2.19\\x01\\x00"),
        "{}",
        f.explanation
    );
}
