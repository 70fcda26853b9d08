//! The `ddp-probe` command line: argument parsing and dispatch only.
fn main() {}
