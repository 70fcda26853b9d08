//! The run's store token, its rule and where its randomness comes from, for the launcher that
//! makes or reads it and the ranks that present it: 1 to [`MAX_STORE_TOKEN_BYTES`] bytes of
//! printable ASCII without spaces ([`store_token_problem`]), drawn from the operating system's
//! generator ([`fill_random`], `getrandom` with `/dev/urandom` as its fallback).

use std::io::{self, Read};

/// Longest store token accepted, in bytes.
pub const MAX_STORE_TOKEN_BYTES: usize = 256;

/// What is wrong with `token` as a store token ("is empty", "has N bytes, more than ...",
/// "must be printable ASCII without spaces"), or `None` when it is fine.
pub fn store_token_problem(token: &str) -> Option<String> {
    if token.is_empty() {
        return Some("is empty".to_owned());
    }
    if token.len() > MAX_STORE_TOKEN_BYTES {
        return Some(format!(
            "has {} bytes, more than the {MAX_STORE_TOKEN_BYTES} a token may have",
            token.len()
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Some("must be printable ASCII without spaces".to_owned());
    }
    None
}

/// Fills `buf` from the operating system's generator: `getrandom`, or `/dev/urandom` where the
/// system call is missing. Never falls back to anything guessable.
pub fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `buf`, valid for writes.
        let r = unsafe {
            libc::getrandom(
                buf[filled..].as_mut_ptr().cast::<libc::c_void>(),
                buf.len() - filled,
                0,
            )
        };
        if r > 0 {
            filled += r as usize;
            continue;
        }
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return std::fs::File::open("/dev/urandom")?.read_exact(&mut buf[filled..]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_rule() {
        assert_eq!(store_token_problem("s3cret-Token"), None);
        assert_eq!(store_token_problem("").as_deref(), Some("is empty"));
        assert!(store_token_problem("two words")
            .unwrap()
            .contains("printable ASCII"));
        assert!(store_token_problem(&"x".repeat(257))
            .unwrap()
            .contains("257 bytes"));
        assert_eq!(store_token_problem(&"x".repeat(256)), None);
    }

    #[test]
    fn random_bytes_differ() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        fill_random(&mut a).unwrap();
        fill_random(&mut b).unwrap();
        assert_ne!(a, b);
    }
}
