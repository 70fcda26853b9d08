//! Exports of a loaded [`crate::model::Run`] to other tools' formats.

pub mod chrome;
