//! `ddp-probe tui` in a real terminal: tmux runs the binary on a generated run, the test sends
//! keys and reads the screen back. Each test uses its own tmux server (`tmux -L`), so the user's
//! sessions are never touched. Skipped, with a message, where tmux is not installed.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use probe::synth::{generate_run, SynthConfig};

/// A private tmux server, killed when dropped (also when a test fails).
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(tag: &str) -> Tmux {
        Tmux {
            socket: format!("ddp-probe-test-{tag}-{}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    fn send(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "tui"];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(out.status.success(), "send-keys: {out:?}");
    }

    fn pane(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "tui"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen contains `needle`; fails with the screen after 15 s.
    fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("showed {needle:?}"), |p| p.contains(needle))
    }

    /// Waits until the screen contains every one of `needles`: a capture can land while the
    /// terminal is half redrawn, so checks on one frame wait for the whole frame.
    fn wait_for_all(&self, needles: &[&str]) -> String {
        self.wait_until(&format!("showed all of {needles:?}"), |p| {
            needles.iter().all(|n| p.contains(n))
        })
    }

    /// Waits until `ok(screen)`; fails with the screen after 15 s.
    fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if ok(&pane) {
                return pane;
            }
            if start.elapsed() > Duration::from_secs(15) {
                panic!("the screen never {what}:\n{pane}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Starts `ddp-probe tui RUN EXTRA...` in a 120×40 tmux window; the shell prints
/// `exit status N` when it ends.
fn start(tag: &str, run: &Path, extra: &str) -> Tmux {
    let cmd = format!(
        "'{}' tui '{}' {extra}; echo \"exit status $?\"; sleep 60",
        env!("CARGO_BIN_EXE_ddp-probe"),
        run.display()
    );
    start_shell(tag, &cmd, 120)
}

/// Starts the shell command `cmd` in a `width`×40 tmux window.
fn start_shell(tag: &str, cmd: &str, width: u16) -> Tmux {
    let tmux = Tmux::new(tag);
    let out = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "tui",
        "-x",
        &width.to_string(),
        "-y",
        "40",
        cmd,
    ]);
    assert!(out.status.success(), "tmux new-session: {out:?}");
    tmux
}

fn generated_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut config = SynthConfig::new(2, 20, 4);
    config.straggler = Some((1, 1.3));
    generate_run(&config, dir.path()).unwrap();
    dir
}

#[test]
fn the_timeline_runs_in_a_real_terminal() {
    if !have_tmux() {
        eprintln!("skipped: tmux is not installed (apt-get install tmux to run this test)");
        return;
    }
    let run = generated_run();
    let tmux = start("main", run.path(), "");
    tmux.wait_for_all(&[
        "r1 compute",
        "ddp-probe",
        "r0 compute",
        "buckets",
        "comm",
        "data",
        "steps",
        " ms",
        "q quit",
    ]);

    tmux.send(&["s"]);
    // The slowest step's span is selected and the status line ranks it.
    tmux.wait_until("selected the slowest step", |screen| {
        screen.contains("by step time")
            && (screen.contains("slowest") || screen.contains("1st of"))
            && screen.contains("▶ step")
    });

    tmux.send(&["1"]);
    tmux.wait_for("step breakdown");
    tmux.send(&["Escape", "Escape"]);

    tmux.send(&["?"]);
    tmux.wait_for_all(&["keys (any key closes)", "slowest step"]);
    tmux.send(&["x"]);
    tmux.send(&["j", "j", "Tab"]);
    tmux.wait_for("all_reduce");

    // The terminal resizes with the window.
    let out = tmux.run(&["resize-window", "-t", "tui", "-x", "80", "-y", "24"]);
    if out.status.success() {
        std::thread::sleep(Duration::from_millis(500));
        let screen = tmux.wait_for("q quit");
        assert!(
            screen.lines().all(|l| l.chars().count() <= 80),
            "drawn for 80 columns:\n{screen}"
        );
    }

    tmux.send(&["q"]);
    let screen = tmux.wait_for("exit status 0");
    assert!(
        !screen.contains("r0 compute"),
        "the alternate screen is left on exit:\n{screen}"
    );
}

#[test]
fn ascii_mode_in_a_real_terminal() {
    if !have_tmux() {
        eprintln!("skipped: tmux is not installed (apt-get install tmux to run this test)");
        return;
    }
    let run = generated_run();
    let tmux = start("ascii", run.path(), "--ascii");
    tmux.wait_for("r1 compute");
    tmux.send(&["n", "Tab", "?"]);
    // The whole help frame (its last key line included) is drawn before the check.
    let screen = tmux.wait_for_all(&["keys (any key closes)", "slowest step"]);
    assert!(screen.is_ascii(), "non-ASCII on screen:\n{screen}");
    tmux.send(&["q"]);
    tmux.wait_for("exit status 0");
}

#[test]
fn a_missing_run_is_an_error_not_a_broken_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["tui", "no-such-run"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-run"), "{err}");
}

#[test]
fn without_a_terminal_the_timeline_says_so() {
    let run = generated_run();
    let out = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .arg("tui")
        .arg(run.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("terminal"), "{err}");
}

#[test]
fn live_mode_follows_a_growing_run() {
    if !have_tmux() {
        eprintln!("skipped: tmux is not installed (apt-get install tmux to run this test)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    // The viewer starts before the run directory exists.
    let tmux = start("live", &run, "--live");
    tmux.wait_for("waiting for traces");
    generate_run(&SynthConfig::new(2, 3, 2), &run).unwrap();
    tmux.wait_for("3 steps");
    tmux.wait_for("LIVE, following");
    generate_run(&SynthConfig::new(2, 12, 2), &run).unwrap();
    let screen = tmux.wait_for("12 steps");
    assert!(screen.contains("r1 compute"), "{screen}");
    // Panning stops following; End follows the latest time again.
    tmux.send(&["h"]);
    tmux.wait_until("stopped following", |p| {
        p.contains("LIVE") && !p.contains("following")
    });
    tmux.send(&["End"]);
    tmux.wait_for("following latest");
    tmux.send(&["q"]);
    tmux.wait_for("exit status 0");
}

/// `ddp-probe run --tui --max-restarts 1`: the first attempt fails, the launcher restarts the
/// workers, and the live view follows the second attempt's traces, naming the attempt and how
/// the first one ended in its title bar.
#[test]
fn live_view_of_run_follows_a_restarted_attempt() {
    if !have_tmux() {
        eprintln!("skipped: tmux is not installed (apt-get install tmux to run this test)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The second attempt's ranks write these traces (a generated run of 6 steps).
    let source = dir.path().join("source");
    generate_run(&SynthConfig::new(2, 6, 2), &source).unwrap();
    let script = format!(
        "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ]; then [ \"$RANK\" = 1 ] && exit 3; \
         exec sleep 30; fi; cp '{}'/traces/rank-$RANK.jsonl \"$DDP_PROBE_TRACE_DIR/\"; sleep 4",
        source.display()
    );
    let cmd = format!(
        "cd '{}' && '{}' run --tui --nproc-per-node 2 --grace 1 --max-restarts 1 -- sh -c '{}'; \
         echo \"exit status $?\"; sleep 60",
        dir.path().display(),
        env!("CARGO_BIN_EXE_ddp-probe"),
        script.replace('\'', "'\\''")
    );
    let tmux = start_shell("restart", &cmd, 160);
    // The two ranks copy their traces one after the other, and the view reloads every 0.5 s:
    // a screen can show rank 0's steps before rank 1's lanes (seen once in CI).
    tmux.wait_for_all(&[
        "attempt 2 of 2 (attempt 1: rank 1 exited with code 3)",
        "step 5",
        "r1 compute",
    ]);
    tmux.wait_for("training finished");
    tmux.send(&["q"]);
    tmux.wait_for("exit status 0");
}

/// `ddp-probe run --tui`, then `q` while the job runs: the terminal says the job goes on and
/// its console follows, rank 0's lines printed after the viewer closed appear there, and the
/// run ends with its summary and status (before, the console stayed silent to the end).
#[test]
fn closing_the_live_view_hands_the_console_back() {
    if !have_tmux() {
        eprintln!("skipped: tmux is not installed (apt-get install tmux to run this test)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source");
    generate_run(&SynthConfig::new(2, 6, 2), &source).unwrap();
    let script = format!(
        "cp '{}'/traces/rank-$RANK.jsonl \"$DDP_PROBE_TRACE_DIR/\"; \
         for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo \"tick $i of rank $RANK\"; sleep 0.5; done",
        source.display()
    );
    let cmd = format!(
        "cd '{}' && '{}' run --tui --nproc-per-node 2 --grace 1 -- sh -c '{}'; \
         echo \"exit status $?\"; sleep 60",
        dir.path().display(),
        env!("CARGO_BIN_EXE_ddp-probe"),
        script.replace('\'', "'\\''")
    );
    let tmux = start_shell("handback", &cmd, 160);
    tmux.wait_for("r1 compute");
    tmux.send(&["q"]);
    let screen = tmux.wait_for_all(&[
        "viewer closed; the job goes on and its console follows here",
        "tick 12 of rank 0",
        "exit status 0",
    ]);
    assert!(
        !screen.contains("of rank 1"),
        "the default console shows rank 0's output only: {screen}"
    );
}
