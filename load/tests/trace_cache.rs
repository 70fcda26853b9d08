//! The binary cache of loaded trace files (`traces/.cache/*.ddpc`): a warm
//! load gives the model a parse gives, a file that changed is parsed again,
//! a damaged cache is ignored and rewritten, a cache that cannot be written
//! changes nothing, and loads racing each other all succeed.

mod model_eq;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use model_eq::{assert_same, cached, load, parser, trace_files};
use probe_load::reader::LoadOptions;
use probe_load::synth::{generate_run, SynthConfig};
use probe_load::Warning;

fn cache_of(trace: &Path) -> PathBuf {
    let stem = trace.file_stem().unwrap().to_str().unwrap();
    trace
        .parent()
        .unwrap()
        .join(".cache")
        .join(format!("{stem}.ddpc"))
}

/// A run of `ranks` ranks big enough that its middle is far from the 4 KiB
/// at each end of its files.
fn synth_run(dir: &Path, ranks: u32) -> Vec<PathBuf> {
    let mut c = SynthConfig::new(ranks, 20, 4);
    c.gpu_kernels = true;
    generate_run(&c, dir).unwrap();
    trace_files(dir)
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

fn set_mtime(path: &Path, t: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// Replaces the first `from` at or after byte `at` of `path` with `to` (of
/// the same length), keeping the modification time.
fn edit_in_place(path: &Path, at: usize, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let t = mtime(path);
    let mut bytes = std::fs::read(path).unwrap();
    let i = at
        + bytes[at..]
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap();
    bytes[i..i + from.len()].copy_from_slice(to.as_bytes());
    std::fs::write(path, &bytes).unwrap();
    set_mtime(path, t);
}

#[test]
fn a_warm_load_reads_the_cache_and_gives_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 3);
    let parsed = load(&files, &parser(false));
    let cold = load(&files, &cached());
    assert_same(&parsed, &cold, "cold");
    for f in &files {
        assert!(cache_of(f).is_file(), "no cache for {}", f.display());
    }
    let warm = load(&files, &cached());
    assert_same(&parsed, &warm, "warm");

    // Proof that the warm load read the cache: a change in the middle of a
    // file that keeps its length, its time and its first and last 4 KiB is
    // invisible to it (the documented limit of the check), but not to a
    // parse.
    let len = std::fs::metadata(&files[0]).unwrap().len() as usize;
    edit_in_place(&files[0], len / 2, "float32", "float31");
    let from_cache = load(&files, &cached());
    assert_same(&parsed, &from_cache, "cache kept");
    let (reparsed, _) = load(&files, &parser(true)).unwrap();
    assert!(reparsed.strings.lookup("float31").is_some());
}

#[test]
fn a_file_that_changed_is_parsed_again() {
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 2);
    load(&files, &cached()).unwrap();
    let spans = |opts: &LoadOptions| load(&files, opts).unwrap().0.span_count();
    let before = spans(&cached());

    // Appended to.
    let mut text = std::fs::read(&files[0]).unwrap();
    text.extend_from_slice(
        br#"{"type":"span","kind":"user","start":1700000000000000000,"end":1700000000000000001,"name":"late"}"#,
    );
    text.push(b'\n');
    std::fs::write(&files[0], &text).unwrap();
    assert_eq!(spans(&cached()), before + 1);
    assert_same(
        &load(&files, &cached()),
        &load(&files, &parser(false)),
        "appended",
    );

    // Rewritten with the same length and the same time, changed in its last
    // 4 KiB.
    let len = text.len();
    edit_in_place(&files[0], len - 200, "\"late\"", "\"LATE\"");
    let (run, _) = load(&files, &cached()).unwrap();
    assert!(run.strings.lookup("LATE").is_some());

    // In its first 4 KiB.
    edit_in_place(&files[0], 0, "node0", "node9");
    let (run, _) = load(&files, &cached()).unwrap();
    assert_eq!(run.ranks[0].header.hostname, "node9");

    // In the middle, with a new modification time.
    edit_in_place(&files[0], len / 2, "float32", "float64");
    set_mtime(&files[0], mtime(&files[0]) + Duration::from_secs(3));
    let (run, _) = load(&files, &cached()).unwrap();
    assert!(run.strings.lookup("float64").is_some());
    assert_same(
        &load(&files, &cached()),
        &load(&files, &parser(false)),
        "rewritten",
    );
}

#[test]
fn damaged_caches_are_ignored_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 1);
    let reference = load(&files, &parser(false));
    load(&files, &cached()).unwrap();
    let cache = cache_of(&files[0]);
    let good = std::fs::read(&cache).unwrap();
    assert!(good.len() > 200);

    let mut damaged: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("garbage".into(), b"not a cache at all".repeat(50)),
        ("header only".into(), good[..72].to_vec()),
        ("cut".into(), good[..good.len() / 2].to_vec()),
        ("one byte short".into(), good[..good.len() - 1].to_vec()),
        ("one byte more".into(), [good.as_slice(), b"x"].concat()),
    ];
    // Flipped bits everywhere: the header's fields, the payload's start,
    // middle and end.
    let mut rng = fastrand::Rng::with_seed(0x2545_f491_4f6c_dd1d);
    let mut positions: Vec<usize> = (0..80).collect();
    positions.extend((0..150).map(|_| rng.usize(..good.len())));
    positions.push(good.len() - 1);
    for p in positions {
        let mut b = good.clone();
        b[p] ^= 1 << (p % 8);
        damaged.push((format!("bit flipped at {p}"), b));
    }
    for (what, bytes) in damaged {
        std::fs::write(&cache, &bytes).unwrap();
        assert_same(&reference, &load(&files, &cached()), &what);
        assert!(
            std::fs::read(&cache).unwrap() == good,
            "{what}: the cache was not rewritten"
        );
    }

    // A cache written for another file.
    let other = tempfile::tempdir().unwrap();
    let mut c = SynthConfig::new(1, 20, 4);
    c.seed = 99;
    generate_run(&c, other.path()).unwrap();
    let other_files = trace_files(other.path());
    load(&other_files, &cached()).unwrap();
    std::fs::copy(cache_of(&other_files[0]), &cache).unwrap();
    assert_same(&reference, &load(&files, &cached()), "another file's cache");
}

#[test]
fn truncated_files_warn_the_same_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 1);
    let text = std::fs::read(&files[0]).unwrap();
    // Cut inside the last line (the end record).
    let cut = text.len() - 20;
    std::fs::write(&files[0], &text[..cut]).unwrap();
    // A killed job's file, untouched for a while.
    set_mtime(&files[0], SystemTime::now() - Duration::from_secs(3600));
    let reference = load(&files, &parser(false));
    let cold = load(&files, &cached());
    assert_same(&reference, &cold, "cold");
    let (run, warnings) = cold.as_ref().unwrap();
    assert!(run.ranks[0].truncated);
    assert!(
        matches!(&warnings[..], [Warning::Truncated { .. }]),
        "{warnings:?}"
    );
    assert!(cache_of(&files[0]).is_file());
    let warm = load(&files, &cached());
    assert_same(&reference, &warm, "warm");

    // The same file still being written (no end record, just modified) is
    // not cached: the next load would only find it grown.
    std::fs::remove_dir_all(dir.path().join("traces/.cache")).unwrap();
    set_mtime(&files[0], SystemTime::now());
    assert_same(&reference, &load(&files, &cached()), "fresh");
    assert!(!cache_of(&files[0]).exists());
}

#[test]
fn a_cache_that_cannot_be_written_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 2);
    let reference = load(&files, &parser(false));
    // `.cache` is taken by a file: the folder cannot be created.
    std::fs::write(dir.path().join("traces/.cache"), b"in the way").unwrap();
    assert_same(&reference, &load(&files, &cached()), "blocked");
    assert_same(&reference, &load(&files, &cached()), "blocked again");
    std::fs::remove_file(dir.path().join("traces/.cache")).unwrap();

    // A read-only traces folder (meaningless for root, who may write
    // anyway).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let traces = dir.path().join("traces");
        std::fs::set_permissions(&traces, std::fs::Permissions::from_mode(0o555)).unwrap();
        assert_same(&reference, &load(&files, &cached()), "read-only");
        std::fs::set_permissions(&traces, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn racing_loads_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 3);
    let reference = load(&files, &parser(false));
    let cache_dir = dir.path().join("traces/.cache");
    std::thread::scope(|s| {
        for t in 0..4 {
            let (files, reference, cache_dir) = (&files, &reference, &cache_dir);
            s.spawn(move || {
                for i in 0..6 {
                    if t == 0 && i % 2 == 1 {
                        let _ = std::fs::remove_dir_all(cache_dir);
                    }
                    let got = load(files, &cached());
                    assert_same(reference, &got, &format!("thread {t} load {i}"));
                }
            });
        }
    });
    // No temporary file is left behind.
    for e in std::fs::read_dir(&cache_dir).unwrap() {
        let name = e.unwrap().file_name();
        assert!(
            name.to_string_lossy().ends_with(".ddpc"),
            "left behind: {name:?}"
        );
    }
}

#[test]
fn small_files_are_not_cached_by_default() {
    let dir = tempfile::tempdir().unwrap();
    generate_run(&SynthConfig::new(2, 3, 2), dir.path()).unwrap();
    probe_load::load_run(&[dir.path()]).unwrap();
    assert!(!dir.path().join("traces/.cache").exists());
    // The cache folder is not mistaken for traces.
    let files = synth_run(dir.path(), 2);
    load(&files, &cached()).unwrap();
    assert!(dir.path().join("traces/.cache").is_dir());
    assert_eq!(trace_files(dir.path()), files);
}

#[test]
fn deferred_caches_are_written_when_asked_with_each_files_own_strings() {
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 3);
    // Rank 1 interns a string of its own first, so its symbols move when the
    // ranks' tables are merged.
    let text = std::fs::read_to_string(&files[1]).unwrap();
    let (header, rest) = text.split_at(text.find('\n').unwrap() + 1);
    let own = r#"{"type":"span","kind":"user","start":1700000000000000000,"end":1700000000000000001,"name":"rank 1 only"}"#;
    std::fs::write(&files[1], format!("{header}{own}\n{rest}")).unwrap();
    set_mtime(&files[1], mtime(&files[1]) - Duration::from_secs(60));

    let parsed = load(&files, &parser(false));
    let (run, warnings, pending) =
        probe_load::reader::load_files_deferred(&files, &cached()).unwrap();
    assert_eq!(pending.len(), files.len());
    for f in &files {
        assert!(!cache_of(f).exists(), "{} cached before write", f.display());
    }
    let (parsed_run, parsed_warnings) = parsed.as_ref().unwrap();
    assert_eq!(parsed_warnings, &warnings);
    model_eq::assert_run_eq(parsed_run, &run, "deferred");
    pending.write(&run);
    for f in &files {
        assert!(cache_of(f).is_file(), "no cache for {}", f.display());
    }
    assert_same(&parsed, &load(&files, &cached()), "warm");
    // Each cache holds its own file's table: loaded alone, every file gives
    // what its parse gives.
    for f in &files {
        let one = std::slice::from_ref(f);
        assert_same(
            &load(one, &parser(false)),
            &load(one, &cached()),
            &f.display().to_string(),
        );
    }
    // Nothing left to write once the caches are there.
    let (_, _, pending) = probe_load::reader::load_files_deferred(&files, &cached()).unwrap();
    assert!(pending.is_empty());
}

#[test]
fn a_ddp_process_group_comes_back_from_the_cache() {
    // Ranks 0 and 2 reduce over one group, 1 and 3 over another (`group_ranks` in the header).
    let dir = tempfile::tempdir().unwrap();
    let files = synth_run(dir.path(), 4);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let (head, rest) = text.split_once('\n').unwrap();
        let rank: u32 = serde_json::from_str::<serde_json::Value>(head).unwrap()["rank"]
            .as_u64()
            .unwrap() as u32;
        let group = format!(r#""ddp":{{"group_ranks":[{},{}],"#, rank % 2, rank % 2 + 2);
        let head = head.replacen(r#""ddp":{"#, &group, 1);
        std::fs::write(f, format!("{head}\n{rest}")).unwrap();
    }
    let parsed = load(&files, &parser(false));
    let cold = load(&files, &cached());
    let warm = load(&files, &cached());
    assert_same(&parsed, &warm, "warm");
    assert_same(&parsed, &cold, "cold");
    let (run, _) = warm.unwrap();
    assert_eq!(run.ddp_subgroups(), vec![vec![0, 2], vec![1, 3]]);
    assert_eq!(run.rank(3).unwrap().seq_group(), 1);
    assert_eq!(run.ddp_group_size(), 2);
}
