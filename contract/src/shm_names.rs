//! Names of the shared-memory files (rings and doorbells) a rank creates under `/dev/shm`. The
//! ranks unlink them as soon as every same-host peer has attached; a rank killed between
//! creating one and unlinking it leaves it behind. The names carry the run id and the node, so
//! the launcher removes what its own ranks left once they have all ended.

/// Where the rings and doorbells live by default.
pub const SHM_DIR: &str = "/dev/shm";

/// The prefix of every shared-memory file of the ranks of `run_id` on node `node_rank`.
pub fn run_prefix(run_id: &str, node_rank: usize) -> String {
    let id: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(96)
        .collect();
    format!("ddp-comm-{id}-n{node_rank}-")
}

/// The prefix of this process's shared-memory files: [`run_prefix`] under `ddp-probe run` (its
/// run id and `GROUP_RANK` in the environment), else `ddp-comm-p<pid>-`.
pub fn prefix_from_env() -> String {
    let run_id = std::env::var(crate::env::RUN_ID).ok();
    let node = std::env::var("GROUP_RANK")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    match (run_id, node) {
        (Some(id), Some(node)) if !id.is_empty() => run_prefix(&id, node),
        _ => format!("ddp-comm-p{}-", std::process::id()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_become_one_file_name_component() {
        assert_eq!(
            run_prefix("20261128-1803-ab", 0),
            "ddp-comm-20261128-1803-ab-n0-"
        );
        assert_eq!(run_prefix("../x/y z", 3), "ddp-comm-.._x_y_z-n3-");
        assert!(!run_prefix(&"a/".repeat(500), 1).contains('/'));
    }
}
