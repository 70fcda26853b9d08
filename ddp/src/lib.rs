//! Reference DistributedDataParallel on libtorch.
