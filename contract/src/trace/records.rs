//! The records of the trace format as serde types.
//!
//! [`Record`] is internally tagged by the `"type"` field. Optional fields are
//! left out when they are `None`, and fields the types do not know are ignored
//! when deserializing, so a newer minor version of the format still parses.
//! Strings that are usually literals (`name`, `op`, `transport`...) are
//! `Cow<'static, str>` so that recording them does not allocate.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::{LogLevel, SpanKind, CLOCK_UNIX_NS, FORMAT_NAME, VERSION};

/// A free-form JSON object attached to a span or instant (`args`).
pub type Args = Map<String, Value>;

/// One line of a trace file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The first record of every file: who wrote it and how DDP is set up.
    Header(Header),
    /// A new bucket layout, valid from `step` on.
    Buckets(BucketsRecord),
    /// Something that took time.
    Span(SpanRecord),
    /// Per-parameter gradient-ready times of one step.
    GradReady(GradReadyRecord),
    /// Something that happened at one point in time.
    Instant(InstantRecord),
    /// A sampled value.
    Counter(CounterRecord),
    /// A log message.
    Log(LogRecord),
    /// The process finished recording.
    End(EndRecord),
}

impl Record {
    /// The record's `"type"` name.
    pub fn type_name(&self) -> &'static str {
        match self {
            Record::Header(_) => "header",
            Record::Buckets(_) => "buckets",
            Record::Span(_) => "span",
            Record::GradReady(_) => "grad_ready",
            Record::Instant(_) => "instant",
            Record::Counter(_) => "counter",
            Record::Log(_) => "log",
            Record::End(_) => "end",
        }
    }

    /// Checks the rules a reader enforces that the types cannot express.
    ///
    /// Returns a sentence saying what is wrong. [`super::TraceWriter`] refuses
    /// records that fail this check, so a writer never produces a file the
    /// reader rejects.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Record::Span(s) => {
                if s.end < s.start {
                    return Err(format!(
                        "span of kind \"{}\" ends ({}) before it starts ({})",
                        s.kind, s.end, s.start
                    ));
                }
                check_step(s.step)
            }
            Record::Instant(i) => check_step(i.step),
            Record::Buckets(b) => check_step(Some(b.step)),
            Record::GradReady(g) => {
                check_step(Some(g.step))?;
                match g.offsets_ns.iter().find(|&&o| o < -1) {
                    Some(o) => Err(format!(
                        "grad_ready offset {o} is negative; use -1 for a parameter without gradient"
                    )),
                    None => Ok(()),
                }
            }
            Record::Header(h) => {
                if h.world_size == 0 {
                    Err("header has world_size 0".to_owned())
                } else if h.rank >= h.world_size {
                    Err(format!(
                        "header has rank {} but world_size {}",
                        h.rank, h.world_size
                    ))
                } else {
                    Ok(())
                }
            }
            Record::Counter(_) | Record::Log(_) | Record::End(_) => Ok(()),
        }
    }
}

/// The largest step number the format allows (steps are stored as `u32`).
pub const MAX_STEP: u64 = u32::MAX as u64 - 1;

fn check_step(step: Option<u64>) -> Result<(), String> {
    match step {
        Some(s) if s > MAX_STEP => Err(format!("step {s} is larger than the maximum {MAX_STEP}")),
        _ => Ok(()),
    }
}

/// The first record of a trace file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "HeaderRepr")]
pub struct Header {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// `"major.minor"`, [`VERSION`] when written by this crate.
    pub version: String,
    /// Identifies the run; all ranks (and all nodes) of a run share it.
    pub run_id: String,
    /// Global rank of this process, `0..world_size`.
    pub rank: u32,
    /// Rank within the node.
    pub local_rank: u32,
    /// Number of ranks in the run.
    pub world_size: u32,
    /// Number of ranks on this node.
    pub local_world_size: u32,
    /// Index of this node.
    pub node_rank: u32,
    /// Host name of the node.
    pub hostname: String,
    /// Process id.
    pub pid: u32,
    /// When recording started (ns since the Unix epoch, this rank's clock).
    pub start_ns: u64,
    /// Clock domain of every timestamp; v1 knows only [`CLOCK_UNIX_NS`].
    pub clock: String,
    /// Add to this rank's timestamps to land on rank 0's timeline (ns).
    pub offset_to_rank0_ns: i64,
    /// Uncertainty of `offset_to_rank0_ns` (ns, half-width).
    pub offset_uncertainty_ns: u64,
    /// Name of the program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Command line of the process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The DDP configuration, if the process trains with DDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ddp: Option<DdpConfig>,
}

/// The header as it may appear in a file: everything past the required
/// fields has a default.
#[derive(Deserialize)]
struct HeaderRepr {
    format: String,
    version: String,
    run_id: String,
    rank: u32,
    local_rank: Option<u32>,
    world_size: u32,
    local_world_size: Option<u32>,
    node_rank: Option<u32>,
    hostname: Option<String>,
    pid: Option<u32>,
    start_ns: u64,
    clock: Option<String>,
    offset_to_rank0_ns: Option<i64>,
    offset_uncertainty_ns: Option<u64>,
    program: Option<String>,
    argv: Option<Vec<String>>,
    ddp: Option<DdpConfig>,
}

/// Every string a header brings is kept with its control and formatting
/// characters escaped ([`crate::text::escape_controls`]): a trace is
/// untrusted input, and every command prints these (the run id, the host,
/// the command line), so no printer can forget to escape them.
fn shown(s: String) -> String {
    match crate::text::escape_controls(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(escaped) => escaped,
    }
}

impl From<HeaderRepr> for Header {
    fn from(r: HeaderRepr) -> Header {
        let ddp = r.ddp.map(|mut d| {
            d.backend = shown(d.backend);
            for p in &mut d.params {
                p.name = shown(std::mem::take(&mut p.name));
                p.dtype = shown(std::mem::take(&mut p.dtype));
            }
            d
        });
        Header {
            format: r.format,
            version: r.version,
            run_id: shown(r.run_id),
            rank: r.rank,
            local_rank: r.local_rank.unwrap_or(r.rank),
            world_size: r.world_size,
            local_world_size: r.local_world_size.unwrap_or(r.world_size),
            node_rank: r.node_rank.unwrap_or(0),
            hostname: shown(r.hostname.unwrap_or_default()),
            pid: r.pid.unwrap_or(0),
            start_ns: r.start_ns,
            clock: shown(r.clock.unwrap_or_else(|| CLOCK_UNIX_NS.to_owned())),
            offset_to_rank0_ns: r.offset_to_rank0_ns.unwrap_or(0),
            offset_uncertainty_ns: r.offset_uncertainty_ns.unwrap_or(0),
            program: r.program.map(shown),
            argv: r.argv.map(|a| a.into_iter().map(shown).collect()),
            ddp,
        }
    }
}

impl Header {
    /// A header for `rank` of `world_size` with this process's host name,
    /// pid, program name and command line, single-node local ranks, zero
    /// clock offset and `start_ns` = now.
    pub fn new(run_id: impl Into<String>, rank: u32, world_size: u32) -> Header {
        let argv: Vec<String> = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .or_else(|| argv.first().cloned());
        Header {
            format: FORMAT_NAME.to_owned(),
            version: VERSION.to_owned(),
            run_id: run_id.into(),
            rank,
            local_rank: rank,
            world_size,
            local_world_size: world_size,
            node_rank: 0,
            hostname: hostname(),
            pid: std::process::id(),
            start_ns: crate::clock::now_ns(),
            clock: CLOCK_UNIX_NS.to_owned(),
            offset_to_rank0_ns: 0,
            offset_uncertainty_ns: 0,
            program,
            argv: Some(argv),
            ddp: None,
        }
    }

    /// Sets the DDP configuration.
    pub fn with_ddp(mut self, ddp: DdpConfig) -> Header {
        self.ddp = Some(ddp);
        self
    }

    /// Sets the measured clock offset to rank 0 and its uncertainty.
    pub fn with_clock_offset(mut self, offset_to_rank0_ns: i64, uncertainty_ns: u64) -> Header {
        self.offset_to_rank0_ns = offset_to_rank0_ns;
        self.offset_uncertainty_ns = uncertainty_ns;
        self
    }

    /// Sets the node layout: node index, rank within the node and ranks per
    /// node.
    pub fn with_node(mut self, node_rank: u32, local_rank: u32, local_world_size: u32) -> Header {
        self.node_rank = node_rank;
        self.local_rank = local_rank;
        self.local_world_size = local_world_size;
        self
    }
}

/// The host name of this machine (`/proc/sys/kernel/hostname`, then
/// `$HOSTNAME`, then `"unknown"`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// How DDP is configured on this rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DdpConfig {
    /// Communication backend (`"gloo"`, `"nccl"`, `"tcp"`, `"shm"`...).
    pub backend: String,
    /// Bucket size cap in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_cap_mb: Option<f64>,
    /// `bucket_cap_mb_list`: one cap per bucket (MiB), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_cap_mb_list: Option<Vec<f64>>,
    /// Size cap of the first bucket in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_bucket_bytes: Option<u64>,
    /// Whether DDP searches the graph for parameters without gradient.
    #[serde(default)]
    pub find_unused_parameters: bool,
    /// `static_graph=True`. A DDP with `find_unused_parameters` but not `static_graph` never
    /// rebuilds its buckets from the gradients' ready order: it keeps the buckets it was built
    /// with. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub static_graph: bool,
    /// Whether `.grad` tensors are views into the buckets (no writeback copy).
    #[serde(default)]
    pub gradient_as_bucket_view: bool,
    /// The parameters, by index.
    #[serde(default)]
    pub params: Vec<ParamInfo>,
    /// The module buffers DDP broadcasts from rank 0 before each forward
    /// (`broadcast_buffers=True`, the default); written when there are any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffers: Vec<BufferInfo>,
    /// The bucket layout at step 0.
    #[serde(default)]
    pub buckets: Vec<BucketInfo>,
    /// The global ranks of the process group DDP reduces over, when it is not the whole world
    /// (`DDP(model, process_group=group)`: data-parallel replicas beside tensor or pipeline
    /// parallelism, a job split into independent groups). The sequence numbers of this rank's
    /// collectives are that group's: only its ranks share them. Written only for such a group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_ranks: Vec<u32>,
}

/// A key that the ranks of one DDP process group share, and no rank of another, from the
/// header's `group_ranks`: the group's lowest rank (0 for the whole world, an empty list).
/// Sequence numbers match across ranks only under one key: each group numbers its own
/// collectives.
pub fn group_key(group_ranks: &[u32]) -> u32 {
    group_ranks.iter().min().copied().unwrap_or(0)
}

/// DDP process groups as a reader names them: `ranks 0, 2; ranks 1, 3`.
pub fn groups_text(groups: &[Vec<u32>]) -> String {
    groups
        .iter()
        .map(|g| {
            let ranks: Vec<String> = g.iter().map(u32::to_string).collect();
            format!("ranks {}", ranks.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One parameter of the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamInfo {
    /// Position in the parameter list (what `offsets_ns` and buckets index).
    pub index: u32,
    /// Qualified name, e.g. `"layer1.0.conv1.weight"`.
    pub name: String,
    /// Tensor shape.
    pub shape: Vec<u64>,
    /// Element type, e.g. `"float32"`.
    pub dtype: String,
    /// Number of elements.
    pub numel: u64,
    /// Size of the gradient in bytes.
    pub bytes: u64,
}

/// One module buffer (`named_buffers()`: BatchNorm's running statistics, masks, position
/// tables).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferInfo {
    /// Qualified name, e.g. `"bn1.running_mean"`.
    pub name: String,
    /// Element type, PyTorch's name (`"float32"`, `"bool"`).
    pub dtype: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// One gradient bucket.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BucketInfo {
    /// Bucket id; buckets are reduced in id order.
    pub id: u32,
    /// Indices of the parameters in the bucket, in bucket order.
    pub params: Vec<u32>,
    /// Size of the bucket in bytes.
    pub bytes: u64,
}

/// A new bucket layout (`"type":"buckets"`), replacing the previous one from
/// `step` on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BucketsRecord {
    /// First step that uses this layout.
    pub step: u64,
    /// When the layout changed (ns), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t: Option<u64>,
    /// Why the layout changed, e.g. `"rebuild"`.
    pub reason: String,
    /// The buckets.
    pub buckets: Vec<BucketInfo>,
}

/// The field names of a span record as the trace format spells them
/// (`type` and every field of [`SpanRecord`]), taken from its serde
/// declaration itself, so they cannot drift from it: the schema that other
/// writers of the format (the PyTorch module) are checked against.
pub fn span_field_names() -> Vec<&'static str> {
    use serde::de::{self, Visitor};

    /// A deserializer that only records the field list handed to it.
    struct Fields(&'static [&'static str]);
    impl<'de> Deserializer<'de> for &mut Fields {
        type Error = de::value::Error;
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(de::Error::custom("field names only"))
        }
        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("field names only"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut fields = Fields(&[]);
    let _ = SpanRecord::deserialize(&mut fields);
    let mut names = vec!["type"];
    names.extend_from_slice(fields.0);
    names
}

/// The optional fields of a span after its `kind`, `step`, `start` and `end`,
/// declared once, in the order the writer writes them. The span record, its
/// setters (here and on the recorder's span builder), the reader's line types
/// and its fast parser's key tables are generated from this list; code that
/// handles fields one by one (the fast parser's value readers, the model)
/// matches on the generated key enum, so a field added here and not handled
/// there does not compile.
///
/// `$m!` is called with items `KIND field: Type`, each with its doc comment,
/// where `KIND` says how the value is written: `num`, a JSON integer of type
/// `Type`; `text`, a JSON string (`Type` is `str`); `tag`, an enum `Type`
/// written as a JSON string.
#[doc(hidden)]
#[macro_export]
macro_rules! span_optional_fields {
    ($m:ident) => {
        $m! {
            /// When the operation was enqueued (ns), for collectives.
            num queued: u64,
            /// Display name.
            text name: str,
            /// Lane override (`"compute"`, `"comm"`, `"data"`, `"buckets"` or any
            /// custom name); the default lane follows from the kind.
            text lane: str,
            /// Gradient bucket id.
            num bucket: u32,
            /// Bytes moved or covered.
            num bytes: u64,
            /// Number of parameters covered.
            num params: u32,
            /// Collective sequence number; equal on all ranks for the same collective.
            num seq: u64,
            /// Collective operation, see [`op`](crate::trace::op).
            text op: str,
            /// Collective algorithm, see [`algo`](crate::trace::algo).
            text algo: str,
            /// Transport, see [`transport`](crate::trace::transport).
            text transport: str,
            /// Peer rank of a point-to-point operation.
            num peer: u32,
            /// Element type of the data.
            text dtype: str,
            /// GPU index.
            num device: u32,
            /// GPU stream id.
            num stream: u64,
            /// Kernel category.
            tag category: $crate::trace::KernelCategory,
            /// Correlation id linking a kernel to the host call that launched it.
            num correlation: u64,
        }
    };
}

/// The type a span record stores a field of [`span_optional_fields`] as.
#[doc(hidden)]
#[macro_export]
macro_rules! span_record_type {
    (num $ty:ty) => { $ty };
    (tag $ty:ty) => { $ty };
    (text $ty:ty) => { ::std::borrow::Cow<'static, str> };
}

/// A setter of a field of [`span_optional_fields`], on the record itself or
/// on a type that may hold one: `$slot`, with `$s` bound to `&mut self`, is
/// the `Option<&mut SpanRecord>` to set the field in; the attributes in
/// brackets go on the setter.
#[doc(hidden)]
#[macro_export]
macro_rules! span_setter {
    ([$(#[$a:meta])*] $ret:ty, |$s:ident| $slot:expr, text $field:ident $ty:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        $(#[$a])*
        #[inline]
        pub fn $field(mut self, v: impl Into<::std::borrow::Cow<'static, str>>) -> $ret {
            let $s = &mut self;
            if let Some(span) = $slot {
                span.$field = Some(v.into());
            }
            self
        }
    };
    ([$(#[$a:meta])*] $ret:ty, |$s:ident| $slot:expr, $kind:ident $field:ident $ty:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        $(#[$a])*
        #[inline]
        pub fn $field(mut self, v: $ty) -> $ret {
            let $s = &mut self;
            if let Some(span) = $slot {
                span.$field = Some(v);
            }
            self
        }
    };
}

macro_rules! span_record {
    ($( $(#[doc = $doc:literal])* $kind:ident $field:ident : $ty:ty ),+ $(,)?) => {
        /// A span (`"type":"span"`): something that took time.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub struct SpanRecord {
            /// What the span measures.
            pub kind: SpanKind,
            /// Training step the span belongs to; `None` outside steps.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub step: Option<u64>,
            /// Start (ns).
            pub start: u64,
            /// End (ns), not before `start`.
            pub end: u64,
            $(
                $(#[doc = $doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<crate::span_record_type!($kind $ty)>,
            )+
            /// Anything else, as a JSON object.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub args: Option<Box<Args>>,
        }

        impl SpanRecord {
            /// A span of `kind` in `step` from `start` to `end` with no other field.
            #[inline]
            pub fn new(kind: SpanKind, step: u64, start: u64, end: u64) -> SpanRecord {
                SpanRecord {
                    kind,
                    step: Some(step),
                    start,
                    end,
                    $( $field: None, )+
                    args: None,
                }
            }

            $( crate::span_setter!([#[must_use]] SpanRecord, |s| Some(&mut *s), $kind $field $ty); )+
        }
    };
}

span_optional_fields!(span_record);

impl SpanRecord {
    /// Sets `args`.
    #[must_use]
    pub fn args(mut self, args: Args) -> SpanRecord {
        self.args = Some(Box::new(args));
        self
    }

    /// Removes the step (for spans outside training steps).
    #[must_use]
    pub fn without_step(mut self) -> SpanRecord {
        self.step = None;
        self
    }
}

/// Per-parameter gradient-ready times of one step (`"type":"grad_ready"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GradReadyRecord {
    /// The step.
    pub step: u64,
    /// Backward start (ns).
    pub t0: u64,
    /// For each parameter index, ns after `t0` its gradient was ready, or
    /// [`super::NO_GRAD`] (`-1`) if it got none.
    pub offsets_ns: Vec<i64>,
}

/// A point in time (`"type":"instant"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstantRecord {
    /// What happened.
    pub name: Cow<'static, str>,
    /// When (ns).
    pub t: u64,
    /// The step, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// Anything else, as a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Box<Args>>,
}

/// A sampled value (`"type":"counter"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterRecord {
    /// What is counted, e.g. `"cuda_memory_allocated_bytes"`.
    pub name: Cow<'static, str>,
    /// When (ns).
    pub t: u64,
    /// The value; JSON `null` stands for a non-finite value.
    #[serde(deserialize_with = "nullable_f64")]
    pub value: f64,
}

fn nullable_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A log message (`"type":"log"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    /// When (ns).
    pub t: u64,
    /// Severity.
    pub level: LogLevel,
    /// The message.
    pub message: String,
}

/// The process stopped recording (`"type":"end"`). A file without one comes
/// from a process that did not finish normally.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndRecord {
    /// When (ns).
    pub t: u64,
    /// `"ok"`, `"error"`, `"panic"`, or another word of the writer's choice.
    pub status: String,
    /// Details, e.g. the error message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::KernelCategory;

    #[test]
    fn span_serializes_compactly_with_type_first() {
        let r = Record::Span(
            SpanRecord::new(SpanKind::Collective, 3, 10, 20)
                .bucket(1)
                .op("all_reduce"),
        );
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(
            s,
            r#"{"type":"span","kind":"collective","step":3,"start":10,"end":20,"bucket":1,"op":"all_reduce"}"#
        );
        let back: Record = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn header_defaults() {
        let h: Header = serde_json::from_str(
            r#"{"format":"ddp-probe-trace","version":"1.0","run_id":"r","rank":1,"world_size":2,"start_ns":5,"extra":true}"#,
        )
        .unwrap();
        assert_eq!(h.local_rank, 1);
        assert_eq!(h.local_world_size, 2);
        assert_eq!(h.clock, CLOCK_UNIX_NS);
        assert_eq!(h.offset_to_rank0_ns, 0);
        assert!(h.ddp.is_none());
    }

    #[test]
    fn counter_null_is_nan() {
        let c: CounterRecord = serde_json::from_str(r#"{"name":"x","t":1,"value":null}"#).unwrap();
        assert!(c.value.is_nan());
        let s = serde_json::to_string(&c).unwrap();
        assert!(s.contains("\"value\":null"), "{s}");
    }

    #[test]
    fn validation() {
        let bad = Record::Span(SpanRecord::new(SpanKind::Forward, 0, 10, 9));
        assert!(bad.validate().unwrap_err().contains("ends"));
        let big = Record::Span(SpanRecord::new(
            SpanKind::Forward,
            u64::from(u32::MAX),
            1,
            2,
        ));
        assert!(big.validate().is_err());
        let mut h = Header::new("r", 0, 1);
        assert!(Record::Header(h.clone()).validate().is_ok());
        h.rank = 1;
        assert!(Record::Header(h).validate().is_err());
    }

    #[test]
    fn span_field_names_are_the_serialized_keys_of_a_full_span() {
        let mut args = Args::new();
        args.insert("k".to_owned(), Value::from(1));
        let full = SpanRecord::new(SpanKind::Collective, 3, 10, 20)
            .queued(5)
            .name("n")
            .lane("l")
            .bucket(1)
            .bytes(64)
            .params(2)
            .seq(7)
            .op("all_reduce")
            .algo("ring")
            .transport("tcp")
            .peer(1)
            .dtype("float32")
            .device(0)
            .stream(7)
            .category(KernelCategory::Comm)
            .correlation(9)
            .args(args);
        let line = serde_json::to_value(Record::Span(full)).unwrap();
        let mut keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut names = span_field_names();
        keys.sort_unstable();
        names.sort_unstable();
        assert_eq!(keys, names);
    }
}
