//! Trace model and file format, recorder, analysis, diagnosis and launcher.
