//! Live mode: the timeline of a run that is being recorded, reloaded in the
//! background while training runs.
//!
//! A worker thread loads the run directory and indexes it whenever the
//! event loop asks; the loop asks again after at least twice the time the
//! last load took (and at least every half second), so a big run never
//! keeps a core busy. The view follows the run as it grows (all of it, or
//! the latest time after `End`) until the user pans or zooms away. A run
//! that restarts its workers (`--max-restarts`) shows its latest attempt,
//! named in the title bar with how the earlier ones ended.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use probe::model::{Run, Strings};

use crate::app::{App, LiveStatus, Options};
use crate::format::clean;
use crate::timeline::Timeline;

/// Shortest time between two loads.
const MIN_INTERVAL: Duration = Duration::from_millis(500);

/// One load's result, the run's attempt line (a run that restarts its
/// workers) and how long it took.
type Loaded = (Result<Timeline, String>, Option<String>, Duration);

/// Loads and indexes the run in `dir`.
fn load(dir: &Path) -> Result<Timeline, String> {
    let (run, _warnings) = probe::load_run(&[dir]).map_err(|e| e.to_string())?;
    Ok(Timeline::new(run))
}

/// A run with nothing in it yet.
pub(crate) fn empty_run() -> Run {
    Run {
        run_id: String::new(),
        world_size: 0,
        ranks: Vec::new(),
        strings: Strings::new(),
    }
}

/// Shows the run being recorded in `run_dir` and keeps reloading it while
/// `done()` is false; once it turns true the run is loaded one last time
/// and stays on screen until the user quits (`q`). Returns when the user
/// quits, whether training has finished or not.
pub fn live(run_dir: &Path, done: impl Fn() -> bool, options: &Options) -> std::io::Result<()> {
    let (req_tx, req_rx) = mpsc::channel::<()>();
    let (res_tx, res_rx) = mpsc::channel::<Loaded>();
    let dir: PathBuf = run_dir.to_path_buf();
    thread::Builder::new()
        .name("ddp-probe-tui-loader".into())
        .spawn(move || {
            for () in req_rx {
                let t = Instant::now();
                let result = load(&dir);
                // After a restart the top level holds the new attempt's files: say so.
                let attempt = probe_explain::attempt_line(&dir);
                if res_tx.send((result, attempt, t.elapsed())).is_err() {
                    break;
                }
            }
        })?;

    let mut app = App::new(Timeline::new(empty_run()), options);
    app.set_sources(vec![run_dir.to_path_buf()]);
    app.set_live(LiveStatus {
        text: "waiting for traces".into(),
        ..LiveStatus::default()
    });
    let shown_dir = clean(&run_dir.display().to_string(), options.ascii).into_owned();
    let mut loading = false;
    let mut next_load = Instant::now();
    let mut final_requested = false;
    let mut finished = false;
    let mut loaded_once = false;
    let result = crate::term::run(&mut app, Duration::from_millis(100), |app| {
        while let Ok((result, attempt, took)) = res_rx.try_recv() {
            loading = false;
            let interval = (took * 2).max(MIN_INTERVAL);
            next_load = Instant::now() + interval;
            let text = match result {
                Ok(tl) => {
                    app.replace_timeline(tl);
                    loaded_once = true;
                    if final_requested {
                        finished = true;
                        "training finished, q to quit".to_owned()
                    } else {
                        format!("reload {:.1} s", interval.as_secs_f64())
                    }
                }
                Err(e) if !loaded_once => {
                    if final_requested {
                        finished = true;
                    }
                    format!("waiting for traces in {shown_dir} ({})", clean(&e, true))
                }
                Err(e) => format!("reload failed: {}", clean(&e, true)),
            };
            let text = match attempt {
                Some(a) => format!("{} · {text}", clean(&a, true)),
                None => text,
            };
            if let Some(status) = app.live().cloned() {
                app.set_live(LiveStatus {
                    text,
                    finished,
                    ..status
                });
            }
        }
        if !final_requested && done() {
            final_requested = true;
            next_load = Instant::now();
        }
        if app.take_reload_request() {
            next_load = Instant::now();
        }
        if !loading && !finished && Instant::now() >= next_load {
            loading = req_tx.send(()).is_ok();
        }
        Ok(())
    });
    drop(req_tx);
    result
}
