//! The run's shared secret ([`Token`]): every store client and every peer
//! connection must present it before anything else is accepted.

use std::fmt;

use crate::error::CommError;

/// Environment variable from which [`Token::from_env`] reads the run's token
/// (the launcher sets it for every rank).
pub use probe_contract::env::STORE_TOKEN as TOKEN_ENV;

/// Longest accepted token, in bytes.
pub use probe_contract::secret::MAX_STORE_TOKEN_BYTES as MAX_TOKEN_BYTES;

/// A run's random shared secret.
///
/// Its `Debug` output is redacted so the secret does not end up in logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Generates a fresh token: 128 random bits from the operating system,
    /// written as 32 hexadecimal characters.
    pub fn generate() -> Result<Token, CommError> {
        let bytes = random_bytes::<16>()?;
        let mut s = String::with_capacity(32);
        for b in bytes {
            s.push_str(&format!("{b:02x}"));
        }
        Ok(Token(s))
    }

    /// Wraps an existing token (for example one passed on a command line).
    ///
    /// It must be 1 to [`MAX_TOKEN_BYTES`] bytes of printable ASCII.
    pub fn new(token: impl Into<String>) -> Result<Token, CommError> {
        let token = token.into();
        if let Some(why) = probe_contract::secret::store_token_problem(&token) {
            return Err(CommError::InvalidArgument(format!("the token {why}")));
        }
        Ok(Token(token))
    }

    /// Reads the token from the [`TOKEN_ENV`] environment variable; `Ok(None)`
    /// when it is not set.
    pub fn from_env() -> Result<Option<Token>, CommError> {
        match std::env::var(TOKEN_ENV) {
            Ok(v) => Token::new(v).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(CommError::InvalidArgument(format!(
                "{TOKEN_ENV} is not valid UTF-8"
            ))),
        }
    }

    /// The token's text (to hand to child processes, e.g. via [`TOKEN_ENV`]).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compares `presented` with this token in time independent of where
    /// they differ.
    pub(crate) fn matches(&self, presented: &[u8]) -> bool {
        let mine = self.0.as_bytes();
        if mine.len() != presented.len() {
            return false;
        }
        let mut diff = 0u8;
        for (a, b) in mine.iter().zip(presented) {
            diff |= a ^ b;
        }
        diff == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// `N` random bytes from the operating system (`getrandom(2)`, falling back
/// to `/dev/urandom`).
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N], CommError> {
    let mut buf = [0u8; N];
    probe_contract::secret::fill_random(&mut buf)
        .map_err(|e| CommError::io("drawing random bytes from the operating system", e))?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_distinct_hex() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert!(a.matches(a.as_str().as_bytes()));
        assert!(!a.matches(b.as_str().as_bytes()));
        assert!(!a.matches(b"short"));
        assert_eq!(format!("{a:?}"), "Token(<redacted>)");
    }

    #[test]
    fn invalid_tokens_are_refused() {
        assert!(Token::new("").is_err());
        assert!(Token::new("has space").is_err());
        assert!(Token::new("x".repeat(MAX_TOKEN_BYTES + 1)).is_err());
        assert!(Token::new("ok-token_1").is_ok());
    }
}
