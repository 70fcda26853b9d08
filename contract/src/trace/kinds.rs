//! The closed vocabularies of the format: span kinds, kernel categories and
//! log levels.
//!
//! Each is a one-byte `Copy` enum that serializes as its snake_case name.
//! Names a reader does not know map to the `Other` variant instead of failing,
//! so traces written by a newer minor version still load.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

macro_rules! name_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal $(| $alias:literal)* ),+ $(,)?
        }
        other: $(#[$ometa:meta])* $other:ident => $other_text:literal
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            $(#[$ometa])*
            $other,
        }

        impl $name {
            /// Every variant, `Other` last.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+ $name::$other];

            /// The name written in trace files.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::$other => $other_text,
                }
            }

            /// The variant for a name of the vocabulary, `None` for unknown names.
            pub fn from_name(name: &str) -> Option<$name> {
                match name {
                    $( $text $(| $alias)* => Some($name::$variant), )+
                    $other_text => Some($name::$other),
                    _ => None,
                }
            }

            /// The variant for a name, `Other` for unknown names.
            pub fn parse(name: &str) -> $name {
                $name::from_name(name).unwrap_or($name::$other)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::parse(v))
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

name_enum! {
    /// What a span measures (the `kind` field of a `span` record).
    SpanKind {
        /// One whole training step, data loading to optimizer.
        Step => "step",
        /// Waiting for the next batch from the data loader.
        DataWait => "data_wait",
        /// The forward pass.
        Forward => "forward",
        /// The backward pass.
        Backward => "backward",
        /// A bucket's gradient-ready window: its first parameter's gradient
        /// ready to its last parameter's gradient ready.
        BucketReady => "bucket_ready",
        /// A collective or point-to-point communication (`op` says which).
        Collective => "collective",
        /// Copying reduced gradients back to the parameters' `.grad`.
        Writeback => "writeback",
        /// The optimizer step.
        Optimizer => "optimizer",
        /// Writing a checkpoint.
        CheckpointSave => "checkpoint_save",
        /// Reading a checkpoint.
        CheckpointLoad => "checkpoint_load",
        /// A GPU kernel (device, stream, category, correlation id).
        Kernel => "kernel",
        /// A memory copy (host-device, device-host or device-device).
        Memcpy => "memcpy",
        /// A span the user recorded (name it with `name`).
        User => "user",
    }
    other:
    /// A kind this version of the format does not know. The reader keeps the
    /// original name (see `probe::model::SpanExtra::kind_name`).
    Other => "other"
}

name_enum! {
    /// The category of a GPU `kernel` span.
    KernelCategory {
        /// Arithmetic kernels (GEMM, convolutions, elementwise...).
        Compute => "compute",
        /// Communication kernels (NCCL).
        Comm => "comm",
        /// Memory copies.
        Memcpy => "memcpy",
        /// Memory sets.
        Memset => "memset",
    }
    other:
    /// Anything else, and names this version does not know.
    Other => "other"
}

name_enum! {
    /// The severity of a `log` record.
    LogLevel {
        /// Very detailed diagnostics.
        Trace => "trace",
        /// Diagnostics.
        Debug => "debug",
        /// Normal progress messages.
        Info => "info",
        /// Something looks wrong but the run goes on.
        Warn => "warn" | "warning",
        /// Something failed.
        Error => "error",
        /// The process is about to die.
        Fatal => "fatal" | "critical",
    }
    other:
    /// Levels this version does not know.
    Other => "other"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in SpanKind::ALL {
            assert_eq!(SpanKind::parse(k.as_str()), *k);
            let json = serde_json::to_string(k).unwrap();
            assert_eq!(serde_json::from_str::<SpanKind>(&json).unwrap(), *k);
        }
        for c in KernelCategory::ALL {
            assert_eq!(KernelCategory::parse(c.as_str()), *c);
        }
        for l in LogLevel::ALL {
            assert_eq!(LogLevel::parse(l.as_str()), *l);
        }
    }

    #[test]
    fn unknown_names_are_other() {
        assert_eq!(SpanKind::parse("prefetch"), SpanKind::Other);
        assert_eq!(SpanKind::from_name("prefetch"), None);
        assert_eq!(
            serde_json::from_str::<KernelCategory>("\"sparse\"").unwrap(),
            KernelCategory::Other
        );
        assert_eq!(LogLevel::parse("warning"), LogLevel::Warn);
        assert_eq!(LogLevel::parse("critical"), LogLevel::Fatal);
        assert_eq!(std::mem::size_of::<SpanKind>(), 1);
    }
}
