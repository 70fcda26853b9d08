//! Fuzz target `store_server`: bytes sent to a running store server over TCP, with or without a valid HELLO first; the server must close the connection itself and keep serving a legitimate client.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| comm::fuzzing::server_session(data));
