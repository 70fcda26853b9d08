//! Reading a buffer full: the one loop the cache, the trace reader and the Kineto importer
//! share for "read until the buffer is full, the input ends, or an error comes".

use std::io::{self, Read};

/// Reads into `buf` until it is full or the input ends, retrying interrupted reads. Returns
/// the bytes read and the error that stopped it early, if any (the bytes before the error
/// are kept, so a caller can use what was read before a cut).
pub fn fill(mut r: impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

/// Reads up to `buf.len()` bytes (fewer only at the end of the input); an error is an error.
pub fn read_full(r: impl Read, buf: &mut [u8]) -> io::Result<usize> {
    match fill(r, buf) {
        (n, None) => Ok(n),
        (_, Some(e)) => Err(e),
    }
}
