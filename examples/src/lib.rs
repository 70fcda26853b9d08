//! Training programs built on the reference DDP.
