//! Terminal timeline of a ddp-probe run.
