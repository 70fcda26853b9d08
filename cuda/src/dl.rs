//! A minimal `dlopen`/`dlsym` wrapper: probing whether a shared library can
//! be loaded, and resolving function pointers from a library that stays
//! loaded for the life of the process.

use std::ffi::{c_void, CStr, CString};
use std::path::PathBuf;
use std::ptr::NonNull;

/// An open `dlopen` handle; closed on drop unless [`Library::keep`] was called.
pub(crate) struct Library {
    handle: NonNull<c_void>,
    /// The name or path it was opened with.
    name: String,
}

// SAFETY: a dlopen handle is a process-wide token; dlsym and dlclose may be
// called with it from any thread (POSIX requires these functions to be
// thread-safe).
unsafe impl Send for Library {}
// SAFETY: as above; the handle is never mutated through `&self`.
unsafe impl Sync for Library {}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("name", &self.name).finish()
    }
}

/// The text of the calling thread's last `dlerror`, or a fallback.
fn last_dl_error() -> String {
    // SAFETY: dlerror takes no arguments; it returns NULL or a pointer to a
    // NUL-terminated string valid until the next dl* call on this thread,
    // which is copied right away.
    let p = unsafe { libc::dlerror() };
    if p.is_null() {
        "unknown dynamic loader error".to_owned()
    } else {
        // SAFETY: non-null, NUL-terminated (see above).
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

impl Library {
    /// Opens `name` (a file name searched by the dynamic loader, or a path)
    /// with `flags` (`RTLD_LAZY`/`RTLD_NOW`, `RTLD_LOCAL`...).
    pub(crate) fn open(name: &str, flags: libc::c_int) -> Result<Library, String> {
        let c = CString::new(name).map_err(|_| format!("{name:?} contains a NUL byte"))?;
        // SAFETY: `c` is a valid NUL-terminated string for the duration of
        // the call. Loading runs the library's initialisers, which is the
        // point of probing.
        let handle = unsafe { libc::dlopen(c.as_ptr(), flags) };
        match NonNull::new(handle) {
            Some(handle) => Ok(Library {
                handle,
                name: name.to_owned(),
            }),
            None => Err(last_dl_error()),
        }
    }

    /// The name or path the library was opened with.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The address of symbol `symbol`.
    pub(crate) fn address(&self, symbol: &str) -> Result<NonNull<c_void>, String> {
        let c = CString::new(symbol).map_err(|_| format!("{symbol:?} contains a NUL byte"))?;
        // SAFETY: clear any stale error first so a NULL result can be told
        // apart from a symbol whose value is NULL.
        unsafe { libc::dlerror() };
        // SAFETY: the handle is open (it is closed only on drop) and `c` is a
        // valid NUL-terminated string.
        let p = unsafe { libc::dlsym(self.handle.as_ptr(), c.as_ptr()) };
        NonNull::new(p)
            .ok_or_else(|| format!("{} has no symbol {symbol} ({})", self.name, last_dl_error()))
    }

    /// The symbol `symbol` as a function pointer of type `F`.
    ///
    /// # Safety
    /// `F` must be an `unsafe extern "C" fn` type matching the symbol's C
    /// declaration, and the library must stay loaded while the pointer is
    /// used (see [`Library::keep`]).
    pub(crate) unsafe fn function<F: Copy>(&self, symbol: &str) -> Result<F, String> {
        if std::mem::size_of::<F>() != std::mem::size_of::<*mut c_void>() {
            return Err(format!(
                "internal error: the type for {symbol} is not pointer-sized"
            ));
        }
        let p = self.address(symbol)?.as_ptr();
        // SAFETY: F is pointer-sized (checked above) and, by the caller's
        // contract, a function pointer type matching the symbol.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) })
    }

    /// The file the library was loaded from, found through a symbol in it.
    pub(crate) fn file_of(&self, symbol: &str) -> Option<PathBuf> {
        let addr = self.address(symbol).ok()?;
        // SAFETY: Dl_info is plain data; all-zero is a valid value.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: `addr` is an address inside a loaded object and `info` is
        // a valid out-pointer.
        let ok = unsafe { libc::dladdr(addr.as_ptr(), &mut info) };
        if ok == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: dli_fname is a NUL-terminated string owned by the loader,
        // valid while the object is loaded (it is: we hold a handle).
        let name = unsafe { CStr::from_ptr(info.dli_fname) };
        Some(PathBuf::from(name.to_string_lossy().into_owned()))
    }

    /// Keeps the library loaded for the rest of the process and returns a
    /// handle that lives as long.
    pub(crate) fn keep(self) -> &'static Library {
        Box::leak(Box::new(self))
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: the handle came from a successful dlopen and is closed once.
        // Function pointers from it are only handed out by libraries that
        // were kept (never dropped).
        unsafe { libc::dlclose(self.handle.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_libc_and_finds_symbols() {
        let lib = Library::open("libc.so.6", libc::RTLD_LAZY | libc::RTLD_LOCAL).unwrap();
        assert!(lib.address("getpid").is_ok());
        let missing = lib.address("no_such_symbol_in_libc").unwrap_err();
        assert!(missing.contains("no_such_symbol_in_libc"), "{missing}");
        // SAFETY: getpid is `pid_t getpid(void)`.
        let getpid: unsafe extern "C" fn() -> libc::pid_t =
            unsafe { lib.function("getpid") }.unwrap();
        // SAFETY: getpid has no preconditions.
        assert_eq!(unsafe { getpid() } as u32, std::process::id());
        let file = lib.file_of("getpid").unwrap();
        assert!(file.to_string_lossy().contains("libc"), "{file:?}");
    }

    #[test]
    fn missing_library_is_an_error() {
        let e = Library::open("libddp-probe-does-not-exist.so.9", libc::RTLD_LAZY).unwrap_err();
        assert!(e.contains("libddp-probe-does-not-exist.so.9"), "{e}");
    }
}
