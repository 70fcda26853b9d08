//! A reader for the data subset of Python's pickle format (protocols 0 to 5),
//! enough for PyTorch's flight-recorder dumps: `None`, booleans, integers,
//! floats, strings, bytes, lists, tuples, dicts and sets, with the memo.
//!
//! Torch's C++ pickler writes protocol 2 (`PROTO`, `EMPTY_DICT`, `BINPUT`,
//! `BINUNICODE`, `SETITEMS`, `BININT*`, `LONG1`, `TUPLE2`, ...); Python's
//! `pickle.dumps` adds `FRAME`, `SHORT_BINUNICODE` and `MEMOIZE`. Opcodes
//! that build arbitrary objects (`GLOBAL`, `REDUCE`, `BUILD`, ...) are
//! refused: nothing is ever executed. Bad input gives an [`PickleError`]
//! naming the byte offset, never a panic. Nesting is bounded ([`budget::PICKLE_DEPTH`], 100 levels), and
//! so are the objects and the bytes of strings the pickle holds once every
//! shared reference is expanded ([`budget::PICKLE_OBJECTS`],
//! [`budget::PICKLE_BYTES`], each raised by its variable): a few hundred bytes
//! of nested memo references would otherwise expand to gigabytes.

use std::cell::Cell;
use std::collections::HashMap;

use probe_contract::budget;

/// A decoded pickle value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// An integer too large for 64 bits (kept as its decimal text).
    BigInt(String),
    /// A float.
    Float(f64),
    /// A `str`.
    Str(String),
    /// A `bytes` (or a protocol-0 `str` of Python 2).
    Bytes(Vec<u8>),
    /// A list.
    List(Vec<Value>),
    /// A tuple.
    Tuple(Vec<Value>),
    /// A dict, in insertion order.
    Dict(Vec<(Value, Value)>),
    /// A set or frozenset.
    Set(Vec<Value>),
}

impl Value {
    /// The value of `key` in a dict with string keys.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(items) => items
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items of a list or tuple.
    pub(crate) fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) | Value::Tuple(v) => Some(v),
            _ => None,
        }
    }

    /// A short Python-like rendering (for evidence lines).
    pub(crate) fn render(&self) -> String {
        let seq = |v: &[Value]| v.iter().map(Value::render).collect::<Vec<_>>().join(", ");
        match self {
            Value::None => "None".to_owned(),
            Value::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
            Value::Int(i) => i.to_string(),
            Value::BigInt(s) => s.clone(),
            Value::Float(f) => f.to_string(),
            Value::Str(s) => s.clone(),
            Value::Bytes(b) => format!("<{} bytes>", b.len()),
            Value::List(v) => format!("[{}]", seq(v)),
            Value::Tuple(v) => format!("({})", seq(v)),
            Value::Set(v) => format!("{{{}}}", seq(v)),
            Value::Dict(items) => format!(
                "{{{}}}",
                items
                    .iter()
                    .map(|(k, v)| format!("{}: {}", k.render(), v.render()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Why a pickle could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a readable pickle at byte {offset}: {message}")]
pub(crate) struct PickleError {
    /// Byte offset of the opcode that failed.
    pub offset: usize,
    /// What was wrong.
    pub message: String,
    /// Whether a budget stopped the reading (the pickle may be fine, only larger than allowed).
    pub over_budget: bool,
}

/// Deepest nesting the variable may allow: each level is a frame of the
/// converting recursion, which must stay within a thread's stack.
const DEPTH_CEILING: u64 = 10_000;

/// A node of the object graph while loading (containers are shared through
/// the memo, and may be filled after being memoized).
#[derive(Debug, Clone)]
enum Node {
    Scalar(Value),
    List(Vec<usize>),
    Tuple(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    Set(Vec<usize>),
}

#[derive(Debug, Clone, Copy)]
enum Item {
    Mark,
    Obj(usize),
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    op_at: usize,
    nodes: Vec<Node>,
    stack: Vec<Item>,
    memo: HashMap<u64, usize>,
    /// Bound on objects loaded plus values expanded ([`budget::PICKLE_OBJECTS`]).
    max_objects: u64,
    /// Bound on bytes of strings expanded ([`budget::PICKLE_BYTES`]).
    max_bytes: u64,
    /// Bound on nesting ([`budget::PICKLE_DEPTH`], at most [`DEPTH_CEILING`]).
    max_depth: usize,
    /// Values produced so far by the conversion (a shared object counts each time).
    expanded: Cell<u64>,
    /// Bytes of strings and bytes produced so far by the conversion.
    expanded_bytes: Cell<u64>,
}

/// Decodes one pickle within the budgets the environment sets.
pub(crate) fn loads(data: &[u8]) -> Result<Value, PickleError> {
    loads_within(
        data,
        budget::PICKLE_OBJECTS.limit(),
        budget::PICKLE_BYTES.limit(),
    )
}

/// Decodes one pickle of at most `max_objects` objects and `max_bytes` bytes of strings, shared
/// references counted each time they are used.
fn loads_within(data: &[u8], max_objects: u64, max_bytes: u64) -> Result<Value, PickleError> {
    let mut m = Machine {
        data,
        pos: 0,
        op_at: 0,
        nodes: Vec::new(),
        stack: Vec::new(),
        memo: HashMap::new(),
        max_objects,
        max_bytes,
        max_depth: budget::PICKLE_DEPTH.limit().min(DEPTH_CEILING) as usize,
        expanded: Cell::new(0),
        expanded_bytes: Cell::new(0),
    };
    let root = m.run()?;
    m.convert(root, 0)
}

impl Machine<'_> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, PickleError> {
        Err(PickleError {
            offset: self.op_at,
            message: message.into(),
            over_budget: false,
        })
    }

    fn over_budget<T>(&self, message: String) -> Result<T, PickleError> {
        Err(PickleError {
            offset: self.op_at,
            message,
            over_budget: true,
        })
    }

    fn take(&mut self, n: usize) -> Result<&[u8], PickleError> {
        match self.pos.checked_add(n) {
            Some(end) if end <= self.data.len() => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            _ => self.err(format!(
                "the data ends inside an opcode (needs {n} more bytes, {} left)",
                self.data.len() - self.pos
            )),
        }
    }

    fn uint(&mut self, n: usize) -> Result<u64, PickleError> {
        let b = self.take(n)?;
        let mut v = 0u64;
        for (i, byte) in b.iter().enumerate() {
            v |= u64::from(*byte) << (8 * i);
        }
        Ok(v)
    }

    fn len(&mut self, n: usize) -> Result<usize, PickleError> {
        let v = self.uint(n)?;
        usize::try_from(v).or_else(|_| self.err("length too large"))
    }

    fn line(&mut self) -> Result<String, PickleError> {
        let rest = &self.data[self.pos..];
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            return self.err("a text argument has no end of line");
        };
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.pos += end + 1;
        Ok(s)
    }

    fn node(&mut self, n: Node) -> Result<usize, PickleError> {
        if self.nodes.len() as u64 >= self.max_objects {
            return self.over_budget(budget::PICKLE_OBJECTS.exceeded(self.max_objects));
        }
        self.nodes.push(n);
        Ok(self.nodes.len() - 1)
    }

    fn push(&mut self, n: Node) -> Result<(), PickleError> {
        let id = self.node(n)?;
        self.stack.push(Item::Obj(id));
        Ok(())
    }

    fn pop(&mut self) -> Result<usize, PickleError> {
        match self.stack.pop() {
            Some(Item::Obj(id)) => Ok(id),
            Some(Item::Mark) => self.err("a mark where an object was expected"),
            None => self.err("the stack is empty"),
        }
    }

    fn top(&self) -> Result<usize, PickleError> {
        match self.stack.last() {
            Some(Item::Obj(id)) => Ok(*id),
            _ => self.err("no object on the stack"),
        }
    }

    fn pop_mark(&mut self) -> Result<Vec<usize>, PickleError> {
        let Some(mark) = self.stack.iter().rposition(|i| matches!(i, Item::Mark)) else {
            return self.err("no mark on the stack");
        };
        let items = self
            .stack
            .drain(mark + 1..)
            .filter_map(|i| match i {
                Item::Obj(id) => Some(id),
                Item::Mark => None,
            })
            .collect();
        self.stack.pop();
        Ok(items)
    }

    fn memo_put(&mut self, key: u64) -> Result<(), PickleError> {
        let top = self.top()?;
        self.memo.insert(key, top);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Result<(), PickleError> {
        match self.memo.get(&key) {
            Some(&id) => {
                self.stack.push(Item::Obj(id));
                Ok(())
            }
            None => self.err(format!("memo key {key} was never stored")),
        }
    }

    fn append(&mut self, list: usize, items: Vec<usize>) -> Result<(), PickleError> {
        match &mut self.nodes[list] {
            Node::List(v) | Node::Set(v) => {
                v.extend(items);
                Ok(())
            }
            _ => self.err("appending to something that is not a list"),
        }
    }

    fn set_items(&mut self, dict: usize, items: Vec<usize>) -> Result<(), PickleError> {
        if !items.len().is_multiple_of(2) {
            return self.err("a dict update with an odd number of items");
        }
        match &mut self.nodes[dict] {
            Node::Dict(v) => {
                v.extend(items.chunks(2).map(|kv| (kv[0], kv[1])));
                Ok(())
            }
            _ => self.err("setting an item of something that is not a dict"),
        }
    }

    fn text_int(&mut self, s: &str) -> Result<Value, PickleError> {
        let t = s.trim().trim_end_matches('L');
        match t {
            "00" => return Ok(Value::Bool(false)),
            "01" => return Ok(Value::Bool(true)),
            _ => {}
        }
        match t.parse::<i64>() {
            Ok(i) => Ok(Value::Int(i)),
            Err(_)
                if !t.is_empty()
                    && t.trim_start_matches('-')
                        .bytes()
                        .all(|b| b.is_ascii_digit()) =>
            {
                Ok(Value::BigInt(t.to_owned()))
            }
            Err(_) => self.err(format!("{s:?} is not an integer")),
        }
    }

    fn long_bytes(&mut self, n: usize) -> Result<Value, PickleError> {
        let b = self.take(n)?.to_vec();
        if b.is_empty() {
            return Ok(Value::Int(0));
        }
        if b.len() > 8 {
            return Ok(Value::BigInt(format!("<{}-byte integer>", b.len())));
        }
        let negative = b[b.len() - 1] & 0x80 != 0;
        let mut v: u64 = if negative { u64::MAX } else { 0 };
        for (i, byte) in b.iter().enumerate() {
            v &= !(0xffu64 << (8 * i));
            v |= u64::from(*byte) << (8 * i);
        }
        Ok(Value::Int(v as i64))
    }

    fn run(&mut self) -> Result<usize, PickleError> {
        loop {
            self.op_at = self.pos;
            let op = match self.data.get(self.pos) {
                Some(&op) => op,
                None => return self.err("the data ends before the STOP opcode (cut off?)"),
            };
            self.pos += 1;
            match op {
                0x80 => {
                    let proto = self.uint(1)?;
                    if proto > 5 {
                        return self.err(format!("protocol {proto} is newer than 5"));
                    }
                }
                0x95 => {
                    self.uint(8)?;
                }
                b'.' => return self.pop(),
                b'(' => self.stack.push(Item::Mark),
                b'0' => {
                    if self.stack.pop().is_none() {
                        return self.err("POP on an empty stack");
                    }
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let top = self.top()?;
                    self.stack.push(Item::Obj(top));
                }
                b'N' => self.push(Node::Scalar(Value::None))?,
                0x88 => self.push(Node::Scalar(Value::Bool(true)))?,
                0x89 => self.push(Node::Scalar(Value::Bool(false)))?,
                b'I' | b'L' => {
                    let s = self.line()?;
                    let v = self.text_int(&s)?;
                    self.push(Node::Scalar(v))?;
                }
                b'J' => {
                    let v = self.uint(4)? as u32 as i32;
                    self.push(Node::Scalar(Value::Int(i64::from(v))))?;
                }
                b'K' => {
                    let v = self.uint(1)?;
                    self.push(Node::Scalar(Value::Int(v as i64)))?;
                }
                b'M' => {
                    let v = self.uint(2)?;
                    self.push(Node::Scalar(Value::Int(v as i64)))?;
                }
                0x8a => {
                    let n = self.len(1)?;
                    let v = self.long_bytes(n)?;
                    self.push(Node::Scalar(v))?;
                }
                0x8b => {
                    let n = self.len(4)?;
                    let v = self.long_bytes(n)?;
                    self.push(Node::Scalar(v))?;
                }
                b'F' => {
                    let s = self.line()?;
                    let Ok(f) = s.trim().parse::<f64>() else {
                        return self.err(format!("{s:?} is not a float"));
                    };
                    self.push(Node::Scalar(Value::Float(f)))?;
                }
                b'G' => {
                    let b = self.take(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    self.push(Node::Scalar(Value::Float(f64::from_be_bytes(a))))?;
                }
                b'X' | 0x8c | 0x8d => {
                    let n = match op {
                        b'X' => self.len(4)?,
                        0x8c => self.len(1)?,
                        _ => self.len(8)?,
                    };
                    let s = String::from_utf8_lossy(self.take(n)?).into_owned();
                    self.push(Node::Scalar(Value::Str(s)))?;
                }
                b'V' => {
                    let s = self.line()?;
                    self.push(Node::Scalar(Value::Str(s)))?;
                }
                b'S' => {
                    let s = self.line()?;
                    let t = s.trim();
                    let inner = t
                        .strip_prefix('\'')
                        .and_then(|t| t.strip_suffix('\''))
                        .or_else(|| t.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
                        .unwrap_or(t);
                    self.push(Node::Scalar(Value::Str(inner.to_owned())))?;
                }
                b'T' | b'U' | b'B' | b'C' | 0x8e => {
                    let n = match op {
                        b'T' | b'B' => self.len(4)?,
                        b'U' | b'C' => self.len(1)?,
                        _ => self.len(8)?,
                    };
                    let b = self.take(n)?.to_vec();
                    let v = match op {
                        // Python 2 str: text in practice.
                        b'T' | b'U' => Value::Str(String::from_utf8_lossy(&b).into_owned()),
                        _ => Value::Bytes(b),
                    };
                    self.push(Node::Scalar(v))?;
                }
                b']' => self.push(Node::List(Vec::new()))?,
                b'l' => {
                    let items = self.pop_mark()?;
                    self.push(Node::List(items))?;
                }
                b'a' => {
                    let item = self.pop()?;
                    let list = self.top()?;
                    self.append(list, vec![item])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let list = self.top()?;
                    self.append(list, items)?;
                }
                b')' => self.push(Node::Tuple(Vec::new()))?,
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Node::Tuple(items))?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop()?);
                    }
                    items.reverse();
                    self.push(Node::Tuple(items))?;
                }
                b'}' => self.push(Node::Dict(Vec::new()))?,
                b'd' => {
                    let items = self.pop_mark()?;
                    let id = self.node(Node::Dict(Vec::new()))?;
                    self.set_items(id, items)?;
                    self.stack.push(Item::Obj(id));
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let dict = self.top()?;
                    self.set_items(dict, vec![k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let dict = self.top()?;
                    self.set_items(dict, items)?;
                }
                0x8f => self.push(Node::Set(Vec::new()))?,
                0x90 => {
                    let items = self.pop_mark()?;
                    let set = self.top()?;
                    self.append(set, items)?;
                }
                0x91 => {
                    let items = self.pop_mark()?;
                    self.push(Node::Set(items))?;
                }
                b'p' => {
                    let s = self.line()?;
                    let Ok(k) = s.trim().parse() else {
                        return self.err(format!("memo key {s:?} is not a number"));
                    };
                    self.memo_put(k)?;
                }
                b'q' => {
                    let k = self.uint(1)?;
                    self.memo_put(k)?;
                }
                b'r' => {
                    let k = self.uint(4)?;
                    self.memo_put(k)?;
                }
                0x94 => {
                    let k = self.memo.len() as u64;
                    self.memo_put(k)?;
                }
                b'g' => {
                    let s = self.line()?;
                    let Ok(k) = s.trim().parse() else {
                        return self.err(format!("memo key {s:?} is not a number"));
                    };
                    self.memo_get(k)?;
                }
                b'h' => {
                    let k = self.uint(1)?;
                    self.memo_get(k)?;
                }
                b'j' => {
                    let k = self.uint(4)?;
                    self.memo_get(k)?;
                }
                other => {
                    return self.err(format!(
                        "opcode 0x{other:02x} ({:?}) is not supported: only plain data (no Python objects) can be read",
                        other as char
                    ))
                }
            }
        }
    }

    fn convert(&self, id: usize, depth: usize) -> Result<Value, PickleError> {
        if depth > self.max_depth {
            return self.over_budget(budget::PICKLE_DEPTH.exceeded(self.max_depth as u64));
        }
        let objects = self.expanded.get() + 1;
        self.expanded.set(objects);
        if objects > self.max_objects {
            return self.over_budget(budget::PICKLE_OBJECTS.exceeded(self.max_objects));
        }
        let all = |v: &[usize]| -> Result<Vec<Value>, PickleError> {
            v.iter().map(|&c| self.convert(c, depth + 1)).collect()
        };
        Ok(match &self.nodes[id] {
            Node::Scalar(v) => {
                let len = match v {
                    Value::Str(t) | Value::BigInt(t) => t.len(),
                    Value::Bytes(b) => b.len(),
                    _ => 0,
                };
                let bytes = self.expanded_bytes.get() + len as u64;
                self.expanded_bytes.set(bytes);
                if bytes > self.max_bytes {
                    return self.over_budget(budget::PICKLE_BYTES.exceeded(self.max_bytes));
                }
                v.clone()
            }
            Node::List(v) => Value::List(all(v)?),
            Node::Tuple(v) => Value::Tuple(all(v)?),
            Node::Set(v) => Value::Set(all(v)?),
            Node::Dict(items) => Value::Dict(
                items
                    .iter()
                    .map(|&(k, v)| Ok((self.convert(k, depth + 1)?, self.convert(v, depth + 1)?)))
                    .collect::<Result<_, PickleError>>()?,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pickle.dumps({'a': [1, -2, 300, 70000, 2**40], 'b': (None, True, 1.5, 'x')}, protocol=2)`
    /// as written by CPython 3.11.
    const PROTO2: &[u8] = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01J\xfe\xff\xff\xffM,\x01J\x70\x11\x01\x00\x8a\x06\x00\x00\x00\x00\x00\x01eX\x01\x00\x00\x00bq\x03(N\x88G?\xf8\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00xq\x04tq\x05u.";

    #[test]
    fn reads_protocol_2_as_python_wrote_it() {
        let v = loads(PROTO2).unwrap();
        assert_eq!(
            v.get("a"),
            Some(&Value::List(vec![
                Value::Int(1),
                Value::Int(-2),
                Value::Int(300),
                Value::Int(70000),
                Value::Int(1 << 40),
            ]))
        );
        let b = v.get("b").and_then(Value::as_seq).unwrap();
        assert_eq!(b[0], Value::None);
        assert_eq!(b[2], Value::Float(1.5));
        assert_eq!(b[3].as_str(), Some("x"));
    }

    /// A pickle of `levels` tuples, each holding the previous one twice through the memo: a
    /// few bytes per level, 2^(levels+1) - 1 values once expanded.
    fn doubling(levels: u32, leaf: &[u8]) -> Vec<u8> {
        let mut p = b"\x80\x02".to_vec();
        p.extend_from_slice(leaf);
        p.extend_from_slice(b"q\x00");
        for i in 1..=levels {
            p.extend_from_slice(&[
                b'h',
                (i - 1) as u8,
                b'h',
                (i - 1) as u8,
                0x86,
                b'q',
                i as u8,
            ]);
        }
        p.push(b'.');
        p
    }

    #[test]
    fn shared_references_expand_within_the_budgets() {
        // 3 levels: 15 values, 8 leaves.
        let small = doubling(3, b"X\x03\x00\x00\x00abc");
        assert!(loads_within(&small, 15, 24).is_ok());
        let e = loads_within(&small, 14, 1 << 20).unwrap_err();
        assert!(e.message.contains("more than 14 objects"), "{e}");
        assert!(e.message.contains("DDP_PROBE_MAX_PICKLE_OBJECTS"), "{e}");
        let e = loads_within(&small, 1 << 20, 23).unwrap_err();
        assert!(e.message.contains("more than 23 bytes of strings"), "{e}");
        assert!(e.message.contains("DDP_PROBE_MAX_PICKLE_BYTES"), "{e}");
        // 120 levels, past the default depth of 100.
        let e = loads_within(&doubling(120, b"N"), 1 << 20, 1 << 20).unwrap_err();
        assert!(e.over_budget, "{e}");
        assert!(e.message.contains("more than 100 levels of nesting"), "{e}");
        assert!(e.message.contains("DDP_PROBE_MAX_PICKLE_DEPTH"), "{e}");
    }

    #[test]
    fn a_few_hundred_bytes_of_nested_references_stop_at_the_default_budget() {
        // 60 levels (429 bytes) would expand to 2^61 values; the default budget stops it after
        // 4 Mi values (1.7 s and 0.3 GB in a debug build here; before, 2^22 values took 6 s and
        // 1.3 GB,
        // and more ran out of memory).
        let bomb = doubling(60, b"N");
        assert!(bomb.len() < 500);
        let e = loads_within(
            &bomb,
            budget::PICKLE_OBJECTS.default,
            budget::PICKLE_BYTES.default,
        )
        .unwrap_err();
        assert!(e.message.contains("objects in the pickle"), "{e}");
    }

    #[test]
    fn memo_refers_to_the_filled_container() {
        // ]q\x00 (K\x01 e  h\x00  \x86 .  -> ([1], [1]) with the list filled after BINPUT.
        let data = b"\x80\x02]q\x00(K\x01eh\x00\x86.";
        let v = loads(data).unwrap();
        let one = Value::List(vec![Value::Int(1)]);
        assert_eq!(v, Value::Tuple(vec![one.clone(), one]));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [
            &b""[..],
            b"\x80",
            b"\x80\x02}",
            b"\x80\x02X\xff\xff\xff\xff",
            b"\x80\x02h\x07.",
            b"\x80\x02cos\nsystem\n.",
            b"\x80\x02e.",
            b"\x80\x02K\x01K\x02s.",
            b"\x80\x09N.",
            b"\x80\x02(u.",
        ] {
            let e = loads(bad).unwrap_err();
            assert!(!e.message.is_empty());
        }
        assert!(loads(b"\x80\x02cos\nsystem\n.")
            .unwrap_err()
            .message
            .contains("not supported"));
        // A list that contains itself cannot be converted: an error, no stack overflow.
        assert!(loads(b"\x80\x02]q\x00h\x00a.").is_err());
    }

    #[test]
    fn every_prefix_of_a_valid_pickle_fails_cleanly() {
        for n in 0..PROTO2.len() {
            assert!(loads(&PROTO2[..n]).is_err(), "prefix of {n} bytes");
        }
    }
}
