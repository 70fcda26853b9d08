//! The environment variables through which the launcher (`ddp-probe run`)
//! talks to the training ranks, named once. Besides these the ranks read
//! torchrun's own (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, ...).

/// The run id shared by every rank of every node.
pub const RUN_ID: &str = "DDP_PROBE_RUN_ID";
/// The run directory (`manifest.json`, `logs/`, `traces/`, `control/`).
pub const RUN_DIR: &str = "DDP_PROBE_RUN_DIR";
/// Where each rank writes its trace, `<dir>/rank-<R>.jsonl`; the launcher
/// sets it to `<run_dir>/traces`.
pub const TRACE_DIR: &str = "DDP_PROBE_TRACE_DIR";
/// `0`, `off`, `false` or `no` turns recording off even under the launcher
/// (to measure the recorder's overhead).
pub const TRACE: &str = "DDP_PROBE_TRACE";
/// The hex token the rendezvous store requires, shared by the run's ranks.
pub const STORE_TOKEN: &str = "DDP_PROBE_STORE_TOKEN";
/// The DDP bucket size in MiB, from `ddp-probe run --bucket-cap-mb`.
pub const BUCKET_CAP_MB: &str = "DDP_PROBE_BUCKET_CAP_MB";
/// `0`, `off`, `false` or `no`: no start-up calibration of the communication
/// cost (`ddp-probe run --no-calibrate`); see [`crate::trace::calibration`].
pub const CALIBRATE: &str = "DDP_PROBE_CALIBRATE";
/// The calibration's time budget in milliseconds (default 1000).
pub const CALIBRATE_MS: &str = "DDP_PROBE_CALIBRATE_MS";
/// Per-bucket caps in MiB, comma-separated, as PyTorch's `bucket_cap_mb_list`
/// (`ddp-probe run --bucket-cap-mb-list`).
pub const BUCKET_CAP_MB_LIST: &str = "DDP_PROBE_BUCKET_CAP_MB_LIST";
/// Gradient compression of the reference DDP: `none`, `fp16` or `bf16`.
pub const COMPRESSION: &str = "DDP_PROBE_COMPRESSION";
/// Seconds a collective may wait before it fails (the reference DDP's groups).
pub const TIMEOUT: &str = "DDP_PROBE_TIMEOUT";
/// A fault for the project's own tests to inject (see docs/reliability.md).
pub const FAULT: &str = "DDP_PROBE_FAULT";
