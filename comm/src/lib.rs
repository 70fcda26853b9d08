//! Rendezvous store and CPU collectives for the reference DDP.
