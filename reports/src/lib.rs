//! HTML/SVG reports of ddp-probe runs.
