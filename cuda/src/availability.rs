//! Which CUDA libraries this process can load, found with `dlopen` before
//! anything calls into them.
//!
//! cudarc's loaders panic when a library is absent, and NCCL, CUPTI and NVTX
//! live in different places depending on how CUDA was installed. So before
//! any call, [`availability`] tries each library the way the dynamic loader
//! would find it (by its file names: `LD_LIBRARY_PATH`, `/etc/ld.so.cache`,
//! the system folders, and libraries this process already loaded, such as the
//! NCCL and CUPTI that `libtorch_cuda.so` pulls in), then in the `nvidia/*/lib`
//! folders of the Python environment that holds libtorch (the CUDA wheels:
//! `.libtorch/../nvidia/nccl/lib/libnccl.so.2`, `nvidia/cu13/lib/...`), then
//! in the CUDA toolkit (`CUDA_HOME`, `CUDA_PATH`, `CUDA_ROOT`,
//! `/usr/local/cuda`, including `extras/CUPTI/lib64`). Each candidate is
//! opened with `RTLD_LAZY | RTLD_LOCAL`, checked for a function it must
//! export, and closed again.
//!
//! The CUDA driver is searched by exactly the names cudarc's loader tries
//! (`libcuda.so`, ..., `libcuda.so.1`), because cudarc loads it itself.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::dl::Library;

/// The CUDA major version the bindings were built for (feature `cuda-13000`).
pub(crate) const CUDA_MAJOR: u32 = 13;

/// A library of the GPU path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CudaLibrary {
    /// The CUDA driver API, `libcuda.so.1` (comes with the NVIDIA driver).
    Driver,
    /// NCCL, `libnccl.so.2`.
    Nccl,
    /// CUPTI, `libcupti.so.*`.
    Cupti,
    /// NVTX, `libnvToolsExt.so.1` or (CUDA 13 wheels) `libnvtx3interop.so.1`.
    Nvtx,
}

impl CudaLibrary {
    /// Every library, in the order of [`Availability`]'s fields.
    pub const ALL: [CudaLibrary; 4] = [
        CudaLibrary::Driver,
        CudaLibrary::Nccl,
        CudaLibrary::Cupti,
        CudaLibrary::Nvtx,
    ];

    /// The library's name as shown to a person.
    pub const fn name(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "the CUDA driver",
            CudaLibrary::Nccl => "NCCL",
            CudaLibrary::Cupti => "CUPTI",
            CudaLibrary::Nvtx => "NVTX",
        }
    }

    /// The file it usually comes as.
    pub const fn file(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "libcuda.so.1",
            CudaLibrary::Nccl => "libnccl.so.2",
            CudaLibrary::Cupti => "libcupti.so",
            CudaLibrary::Nvtx => "libnvToolsExt.so.1 or libnvtx3interop.so.1",
        }
    }

    /// A function every usable version exports; a file without it is not
    /// the library.
    pub(crate) const fn probe_symbol(self) -> &'static str {
        match self {
            CudaLibrary::Driver => "cuInit",
            CudaLibrary::Nccl => "ncclGetVersion",
            CudaLibrary::Cupti => "cuptiGetTimestamp",
            CudaLibrary::Nvtx => "nvtxRangePushA",
        }
    }

    /// What to do about its absence.
    const fn hint(self) -> &'static str {
        match self {
            CudaLibrary::Driver => {
                "it comes with the NVIDIA driver (not with the CUDA wheels), so this needs a \
                 machine with an NVIDIA GPU and its driver installed"
            }
            CudaLibrary::Nccl => {
                "install the nvidia-nccl wheel (pip install nvidia-nccl-cu13, which the torch \
                 wheel depends on) or set LD_LIBRARY_PATH"
            }
            CudaLibrary::Cupti => {
                "install the nvidia-cuda-cupti wheel (a dependency of the torch wheel) or the \
                 CUDA toolkit's extras/CUPTI, or set LD_LIBRARY_PATH"
            }
            CudaLibrary::Nvtx => {
                "install the nvidia-nvtx wheel (a dependency of the torch wheel) or the CUDA \
                 toolkit, or set LD_LIBRARY_PATH"
            }
        }
    }

    /// The names handed to the dynamic loader, in order.
    pub(crate) fn loader_names(self) -> Vec<String> {
        match self {
            CudaLibrary::Driver => {
                // Exactly what cudarc's driver loader tries, so that a
                // positive answer here means cudarc will find it too.
                let names = std::panic::catch_unwind(|| {
                    let mut v = cudarc::get_lib_name_candidates("cuda");
                    v.extend(cudarc::get_lib_name_candidates("nvcuda"));
                    v
                })
                .unwrap_or_else(|_| vec!["libcuda.so.1".to_owned(), "libcuda.so".to_owned()]);
                dedup(names)
            }
            CudaLibrary::Nccl => vec!["libnccl.so.2".into(), "libnccl.so".into()],
            CudaLibrary::Cupti => vec![
                format!("libcupti.so.{CUDA_MAJOR}"),
                format!("libcupti.so.{}", CUDA_MAJOR - 1),
                "libcupti.so".into(),
            ],
            CudaLibrary::Nvtx => vec![
                "libnvToolsExt.so.1".into(),
                "libnvtx3interop.so.1".into(),
                "libnvToolsExt.so".into(),
                "libnvtx3interop.so".into(),
            ],
        }
    }

    /// File names (before any `.N` version suffix) looked for in folders;
    /// none for the driver, which is only ever found by the loader.
    pub(crate) const fn file_stems(self) -> &'static [&'static str] {
        match self {
            CudaLibrary::Driver => &[],
            CudaLibrary::Nccl => &["libnccl.so"],
            CudaLibrary::Cupti => &["libcupti.so"],
            CudaLibrary::Nvtx => &["libnvToolsExt.so", "libnvtx3interop.so"],
        }
    }
}

impl fmt::Display for CudaLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A library that loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Which library.
    pub library: CudaLibrary,
    /// The name or path that `dlopen` accepted.
    pub loaded_as: String,
    /// The file it resolved to, where the loader tells.
    pub file: Option<PathBuf>,
}

impl Found {
    /// The file if known, else the name it was loaded as.
    pub fn location(&self) -> String {
        match &self.file {
            Some(f) => f.display().to_string(),
            None => self.loaded_as.clone(),
        }
    }
}

/// A library that cannot be loaded, with everything that was tried.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct Unavailable {
    /// Which library.
    pub library: CudaLibrary,
    /// The names handed to the dynamic loader.
    pub searched_names: Vec<String>,
    /// The folders searched.
    pub searched_dirs: Vec<PathBuf>,
    /// Candidates that exist but failed to load or lack the expected
    /// function, with the loader's message.
    pub failures: Vec<String>,
}

impl Unavailable {
    fn message(&self) -> String {
        let lib = self.library;
        // The driver's list is cudarc's ~30 candidate names: show the two
        // that matter on Linux and count the rest.
        let shown: Vec<&str> = match lib {
            CudaLibrary::Driver => self
                .searched_names
                .iter()
                .map(String::as_str)
                .filter(|n| *n == "libcuda.so.1" || *n == "libcuda.so")
                .collect(),
            _ => self.searched_names.iter().map(String::as_str).collect(),
        };
        let mut where_ = shown.join(", ");
        let hidden = self.searched_names.len() - shown.len();
        if hidden > 0 {
            where_.push_str(&format!(" and {hidden} other names cudarc tries"));
        }
        where_.push_str(" (through the dynamic loader: LD_LIBRARY_PATH=");
        match std::env::var("LD_LIBRARY_PATH") {
            Ok(v) if !v.is_empty() => where_.push_str(&v),
            _ => where_.push_str("<unset>"),
        }
        where_.push_str(", /etc/ld.so.cache, the system folders, libraries already loaded)");
        for d in &self.searched_dirs {
            where_.push_str(", ");
            where_.push_str(&d.display().to_string());
        }
        let mut text = format!(
            "{} ({}) was not found: {}; ddp-probe searched: {where_}",
            capitalise(lib.name()),
            lib.file(),
            lib.hint()
        );
        if !self.failures.is_empty() {
            text.push_str("; candidates that failed to load: ");
            text.push_str(&self.failures.join("; "));
        }
        text
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Which CUDA libraries load in this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Availability {
    /// The CUDA driver (`libcuda.so.1`).
    pub cuda: Result<Found, Unavailable>,
    /// NCCL (`libnccl.so.2`).
    pub nccl: Result<Found, Unavailable>,
    /// CUPTI (`libcupti.so*`).
    pub cupti: Result<Found, Unavailable>,
    /// NVTX (`libnvToolsExt.so*`, `libnvtx3interop.so*`).
    pub nvtx: Result<Found, Unavailable>,
}

impl Availability {
    /// Probes every library now (without the cache of [`availability`]).
    pub fn probe() -> Availability {
        let dirs = search_dirs();
        Availability {
            cuda: probe_library(CudaLibrary::Driver, &dirs),
            nccl: probe_library(CudaLibrary::Nccl, &dirs),
            cupti: probe_library(CudaLibrary::Cupti, &dirs),
            nvtx: probe_library(CudaLibrary::Nvtx, &dirs),
        }
    }

    /// The result for one library.
    pub fn get(&self, library: CudaLibrary) -> &Result<Found, Unavailable> {
        match library {
            CudaLibrary::Driver => &self.cuda,
            CudaLibrary::Nccl => &self.nccl,
            CudaLibrary::Cupti => &self.cupti,
            CudaLibrary::Nvtx => &self.nvtx,
        }
    }

    /// Whether every library loads.
    pub fn all_available(&self) -> bool {
        CudaLibrary::ALL.iter().all(|l| self.get(*l).is_ok())
    }

    /// The first of `libraries` that is missing, as an error.
    pub fn require(&self, libraries: &[CudaLibrary]) -> Result<(), Unavailable> {
        for l in libraries {
            if let Err(e) = self.get(*l) {
                return Err(e.clone());
            }
        }
        Ok(())
    }
}

impl fmt::Display for Availability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, l) in CudaLibrary::ALL.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match self.get(*l) {
                Ok(found) => write!(f, "{}: {}", l.name(), found.location())?,
                Err(e) => write!(f, "{}: unavailable: {e}", l.name())?,
            }
        }
        Ok(())
    }
}

static CACHE: OnceLock<Availability> = OnceLock::new();

/// Which CUDA libraries load in this process; probed on the first call and
/// remembered (the dynamic loader's search path does not change while a
/// process runs). Never panics and never calls into the libraries beyond
/// loading them.
pub fn availability() -> Availability {
    cached().clone()
}

/// The cached probe.
pub(crate) fn cached() -> &'static Availability {
    CACHE.get_or_init(Availability::probe)
}

/// Fails with the [`Unavailable`] library unless every library in `libraries`
/// loads.
pub(crate) fn require(libraries: &[CudaLibrary]) -> Result<(), Unavailable> {
    cached().require(libraries)
}

/// Opens the library [`availability`] found, for use, and keeps it loaded
/// for the rest of the process.
pub(crate) fn open_for_use(library: CudaLibrary) -> Result<&'static Library, Unavailable> {
    let found = cached().get(library).as_ref().map_err(Clone::clone)?;
    let lib =
        Library::open(&found.loaded_as, libc::RTLD_NOW | libc::RTLD_LOCAL).map_err(|msg| {
            Unavailable {
                library,
                searched_names: vec![found.loaded_as.clone()],
                searched_dirs: Vec::new(),
                failures: vec![msg],
            }
        })?;
    Ok(lib.keep())
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(v.len());
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Tries one candidate: loads it, checks the probe symbol, unloads it.
fn try_candidate(library: CudaLibrary, what: &str) -> Result<Found, String> {
    let lib = Library::open(what, libc::RTLD_LAZY | libc::RTLD_LOCAL)?;
    let symbol = library.probe_symbol();
    lib.address(symbol)?;
    Ok(Found {
        library,
        loaded_as: lib.name().to_owned(),
        file: lib.file_of(symbol),
    })
}

/// Whether a loader message says more than "no such file".
fn is_informative_failure(message: &str) -> bool {
    !message.contains("No such file or directory")
}

fn probe_library(library: CudaLibrary, dirs: &[PathBuf]) -> Result<Found, Unavailable> {
    let names = library.loader_names();
    let mut failures = Vec::new();
    for name in &names {
        match try_candidate(library, name) {
            Ok(found) => return Ok(found),
            Err(msg) if is_informative_failure(&msg) => failures.push(msg),
            Err(_) => {}
        }
    }
    let stems = library.file_stems();
    let mut searched_dirs = Vec::new();
    if !stems.is_empty() {
        for dir in dirs {
            searched_dirs.push(dir.clone());
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let files: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            for file in matching_files(&files, stems) {
                let path = dir.join(&file);
                let path_text = path.to_string_lossy().into_owned();
                match try_candidate(library, &path_text) {
                    Ok(found) => return Ok(found),
                    Err(msg) => failures.push(msg),
                }
            }
        }
    }
    Err(Unavailable {
        library,
        searched_names: names,
        searched_dirs,
        failures,
    })
}

/// The numeric components of a version suffix (`"13.0.85"` → `[13, 0, 85]`);
/// `None` unless it is dot-separated decimal numbers.
fn version_parts(suffix: &str) -> Option<Vec<u64>> {
    suffix.split('.').map(|p| p.parse::<u64>().ok()).collect()
}

/// The entries of a folder that are one of `stems` (`libcupti.so`) or a
/// versioned file of it (`libcupti.so.13`, `libcupti.so.2025.1.0`), in the
/// order to try: stems in order; for each, the highest version first and
/// the unversioned name (usually a development symlink) last.
pub(crate) fn matching_files(entries: &[String], stems: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for stem in stems {
        let mut versioned: Vec<(Vec<u64>, &String)> = Vec::new();
        let mut plain = None;
        for e in entries {
            if e == stem {
                plain = Some(e);
            } else if let Some(rest) = e.strip_prefix(stem).and_then(|r| r.strip_prefix('.')) {
                if let Some(v) = version_parts(rest) {
                    versioned.push((v, e));
                }
            }
        }
        versioned.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        out.extend(versioned.into_iter().map(|(_, e)| e.clone()));
        out.extend(plain.cloned());
    }
    out
}

/// Folders holding a libtorch already mapped into this process, read from
/// the text of `/proc/self/maps`.
pub(crate) fn loaded_torch_lib_dirs(maps: &str) -> Vec<PathBuf> {
    const MARKERS: [&str; 3] = ["libtorch_cpu.so", "libc10.so", "libtorch.so"];
    let mut out: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        let Some(i) = line.find(" /") else { continue };
        let path = line[i + 1..].trim_end();
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let path = Path::new(path);
        let is_torch = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| MARKERS.contains(&n));
        if let (true, Some(dir)) = (is_torch, path.parent()) {
            if !out.iter().any(|d| d == dir) {
                out.push(dir.to_path_buf());
            }
        }
    }
    out
}

/// The `nvidia/<package>/lib` folders of the Python environment whose
/// `site-packages/torch/lib` is `torch_lib` (the layout of the torch wheel
/// and the CUDA wheels it depends on).
pub(crate) fn wheel_lib_dirs(torch_lib: &Path) -> Vec<PathBuf> {
    let torch_lib = torch_lib
        .canonicalize()
        .unwrap_or_else(|_| torch_lib.to_path_buf());
    match torch_lib.parent().and_then(Path::parent) {
        Some(site_packages) => nvidia_lib_dirs(site_packages),
        None => Vec::new(),
    }
}

/// `site_packages/nvidia/*/lib`, sorted.
pub(crate) fn nvidia_lib_dirs(site_packages: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(site_packages.join("nvidia")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("lib"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every folder searched after the dynamic loader, in order, without
/// duplicates: the CUDA wheels next to the libtorch in use, those of the
/// active virtual environment, then the CUDA toolkit.
pub(crate) fn search_dirs() -> Vec<PathBuf> {
    let mut torch_libs = std::fs::read_to_string("/proc/self/maps")
        .map(|m| loaded_torch_lib_dirs(&m))
        .unwrap_or_default();
    if let Some(root) = std::env::var_os("LIBTORCH").filter(|v| !v.is_empty()) {
        torch_libs.push(PathBuf::from(root).join("lib"));
    }
    // The libtorch this crate was built against (`.cargo/config.toml`
    // points LIBTORCH at the project's `.libtorch`).
    if let Some(root) = option_env!("LIBTORCH").filter(|v| !v.is_empty()) {
        torch_libs.push(PathBuf::from(root).join("lib"));
    }
    let mut dirs = Vec::new();
    for t in &torch_libs {
        dirs.extend(wheel_lib_dirs(t));
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        let lib = PathBuf::from(venv).join("lib");
        if let Ok(entries) = std::fs::read_dir(&lib) {
            let mut pythons: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
                .map(|e| e.path().join("site-packages"))
                .collect();
            pythons.sort();
            for site in pythons {
                dirs.extend(nvidia_lib_dirs(&site));
            }
        }
    }
    dirs.extend(toolkit_dirs(|k| std::env::var_os(k)));
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs {
        let key = d.canonicalize().unwrap_or_else(|_| d.clone());
        if !out
            .iter()
            .any(|o| o.canonicalize().unwrap_or_else(|_| o.clone()) == key)
        {
            out.push(d);
        }
    }
    out
}

/// The CUDA toolkit's library folders that exist, from `CUDA_HOME`,
/// `CUDA_PATH`, `CUDA_ROOT` (read through `var`) and `/usr/local/cuda`.
pub(crate) fn toolkit_dirs(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"]
        .iter()
        .filter_map(|k| var(k).filter(|v| !v.is_empty()).map(PathBuf::from))
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    let mut out = Vec::new();
    for r in roots {
        for sub in ["lib64", "lib", "extras/CUPTI/lib64"] {
            let d = r.join(sub);
            if d.is_dir() && !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn versioned_files_highest_first_and_plain_last() {
        let entries = strings(&[
            "libcupti.so",
            "libcupti.so.12",
            "libcupti.so.13",
            "libcupti.so.2025.1.0",
            "libcupti_static.a",
            "libcupti.so.13.bak",
            "libnvperf_host.so",
        ]);
        assert_eq!(
            matching_files(&entries, &["libcupti.so"]),
            strings(&[
                "libcupti.so.2025.1.0",
                "libcupti.so.13",
                "libcupti.so.12",
                "libcupti.so"
            ])
        );
        let nvtx = strings(&["libnvtx3interop.so.1", "libnvToolsExt.so.1", "x"]);
        assert_eq!(
            matching_files(&nvtx, CudaLibrary::Nvtx.file_stems()),
            strings(&["libnvToolsExt.so.1", "libnvtx3interop.so.1"])
        );
        assert!(matching_files(&nvtx, CudaLibrary::Driver.file_stems()).is_empty());
    }

    #[test]
    fn torch_dirs_from_proc_maps() {
        let maps = "\
7f00 r--p 00000000 08:01 11 /venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so
7f01 r-xp 00001000 08:01 11 /venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so
7f02 r--p 00000000 08:01 12 /venv/lib/python3.11/site-packages/torch/lib/libc10.so
7f03 r--p 00000000 08:01 13 /usr/lib/x86_64-linux-gnu/libc.so.6
7f04 rw-p 00000000 00:00 0 [heap]
7f05 r--p 00000000 08:01 14 /odd path/with spaces/libc10.so (deleted)
";
        assert_eq!(
            loaded_torch_lib_dirs(maps),
            vec![
                PathBuf::from("/venv/lib/python3.11/site-packages/torch/lib"),
                PathBuf::from("/odd path/with spaces"),
            ]
        );
    }

    #[test]
    fn wheel_layout() {
        let root = tempfile::tempdir().unwrap();
        let site = root.path().join("site-packages");
        let torch_lib = site.join("torch/lib");
        std::fs::create_dir_all(&torch_lib).unwrap();
        for p in ["nvidia/nccl/lib", "nvidia/cu13/lib", "nvidia/cudnn/lib"] {
            std::fs::create_dir_all(site.join(p)).unwrap();
        }
        std::fs::create_dir_all(site.join("nvidia/no_lib_folder")).unwrap();
        let site = site.canonicalize().unwrap();
        assert_eq!(
            wheel_lib_dirs(&torch_lib),
            vec![
                site.join("nvidia/cu13/lib"),
                site.join("nvidia/cudnn/lib"),
                site.join("nvidia/nccl/lib"),
            ]
        );
        assert!(wheel_lib_dirs(Path::new("/")).is_empty());
    }

    #[test]
    fn toolkit_dirs_from_variables() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("lib64")).unwrap();
        std::fs::create_dir_all(root.path().join("extras/CUPTI/lib64")).unwrap();
        let home = root.path().as_os_str().to_owned();
        let dirs = toolkit_dirs(|k| (k == "CUDA_HOME").then(|| home.clone()));
        assert_eq!(dirs[0], root.path().join("lib64"));
        assert_eq!(dirs[1], root.path().join("extras/CUPTI/lib64"));
    }

    #[test]
    fn unavailable_message_names_library_hint_and_places() {
        let e = Unavailable {
            library: CudaLibrary::Nccl,
            searched_names: CudaLibrary::Nccl.loader_names(),
            searched_dirs: vec![PathBuf::from("/venv/site-packages/nvidia/nccl/lib")],
            failures: vec!["/x/libnccl.so.2: wrong ELF class: ELFCLASS32".into()],
        };
        let text = e.to_string();
        assert!(
            text.starts_with("NCCL (libnccl.so.2) was not found: install the nvidia-nccl wheel"),
            "{text}"
        );
        assert!(text.contains("or set LD_LIBRARY_PATH"), "{text}");
        assert!(
            text.contains("ddp-probe searched: libnccl.so.2, libnccl.so"),
            "{text}"
        );
        assert!(
            text.contains("/venv/site-packages/nvidia/nccl/lib"),
            "{text}"
        );
        assert!(text.contains("wrong ELF class"), "{text}");
        let driver = Unavailable {
            library: CudaLibrary::Driver,
            searched_names: vec!["libcuda.so.1".into()],
            searched_dirs: Vec::new(),
            failures: Vec::new(),
        };
        assert!(driver
            .to_string()
            .starts_with("The CUDA driver (libcuda.so.1) was not found"));
        let all = Unavailable {
            library: CudaLibrary::Driver,
            searched_names: CudaLibrary::Driver.loader_names(),
            searched_dirs: Vec::new(),
            failures: Vec::new(),
        };
        let text = all.to_string();
        let others = all.searched_names.len() - 2;
        assert!(
            text.contains(&format!(
                "searched: libcuda.so, libcuda.so.1 and {others} other names cudarc tries"
            )),
            "{text}"
        );
    }

    #[test]
    fn driver_names_are_cudarcs() {
        let names = CudaLibrary::Driver.loader_names();
        assert!(names.contains(&"libcuda.so".to_owned()), "{names:?}");
        assert!(names.contains(&"libcuda.so.1".to_owned()), "{names:?}");
        assert_eq!(
            CudaLibrary::Cupti.loader_names(),
            strings(&["libcupti.so.13", "libcupti.so.12", "libcupti.so"])
        );
    }

    #[test]
    fn not_found_informative_filter() {
        assert!(!is_informative_failure(
            "libnccl.so.2: cannot open shared object file: No such file or directory"
        ));
        assert!(is_informative_failure(
            "libnccl.so.2: undefined symbol: cudaGetDevice"
        ));
    }
}
