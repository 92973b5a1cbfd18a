//! Errors: the runtime's `Kind: message` text as a Rust value, and the one helper that turns a
//! C status code into a `Result` (`check_call`).
use std::ffi::CStr;
use std::fmt;

/// `Result` with polyffi's [`Error`] as the default error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error raised by the runtime, a callee, or this binding.
///
/// `kind` is the kind of the runtime's error text (`TypeError`, `ValueError`, ... or any
/// `[A-Za-z0-9_.]+` name; `TVMError` when the text has none), `message` the rest of its first
/// line, and `traceback` whatever followed after a newline.
///
/// The text sits behind one pointer, so a `Result<T>` is as small as `T` allows: the success
/// path of every call moves a few words, not three `String`s.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorText>);

#[derive(Clone, PartialEq, Eq)]
struct ErrorText {
    kind: String,
    message: String,
    traceback: Option<String>,
}

impl Error {
    /// An error of the given kind, e.g. `Error::new("ValueError", "bad shape")`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Error(Box::new(ErrorText {
            kind: kind.into(),
            message: message.into(),
            traceback: None,
        }))
    }

    /// The error kind, e.g. `"TypeError"` (or `"RustPanic"` for a panic in a closure).
    pub fn kind(&self) -> &str {
        &self.0.kind
    }

    /// The message without the kind (the rest of the first line).
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Lines after the first one of the runtime's error text, if any.
    pub fn traceback(&self) -> Option<&str> {
        self.0.traceback.as_deref()
    }

    /// Parses `Kind: message[\ntraceback]` the way the ABI defines it.
    pub fn parse(text: &str) -> Self {
        let (first, rest) = match text.split_once('\n') {
            Some((first, rest)) => (first, Some(rest.to_string())),
            None => (text, None),
        };
        let (kind, message) = match first.split_once(": ") {
            Some((kind, message)) if is_kind(kind) => (kind, message),
            _ => match first.strip_suffix(':') {
                Some(kind) if is_kind(kind) => (kind, ""),
                _ => ("TVMError", first),
            },
        };
        Error(Box::new(ErrorText {
            kind: kind.to_string(),
            message: message.to_string(),
            traceback: rest,
        }))
    }

    /// The calling thread's last runtime error.
    pub(crate) fn last() -> Self {
        // SAFETY: TVMGetLastError never returns NULL; the text is thread-local and copied here.
        let text = unsafe { CStr::from_ptr(polyffi_sys::TVMGetLastError()) };
        Error::parse(&text.to_string_lossy())
    }

    pub(crate) fn type_error(message: impl Into<String>) -> Self {
        Error::new("TypeError", message)
    }

    pub(crate) fn value_error(message: impl Into<String>) -> Self {
        Error::new("ValueError", message)
    }

    /// The text handed to `TVMAPISetLastError` when this error leaves a Rust callback.
    pub(crate) fn to_abi_text(&self) -> String {
        let mut text = format!("{}: {}", self.0.kind, self.0.message);
        if let Some(tb) = &self.0.traceback {
            text.push('\n');
            text.push_str(tb);
        }
        text
    }
}

fn is_kind(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.kind, self.0.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.0.kind, self.0.message)?;
        if let Some(tb) = &self.0.traceback {
            write!(f, "\n{tb}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<std::ffi::NulError> for Error {
    fn from(e: std::ffi::NulError) -> Self {
        Error::value_error(format!(
            "string contains a NUL byte at {}",
            e.nul_position()
        ))
    }
}

/// The one status check: 0 is success, anything else turns the thread's last error into an Err.
#[inline]
pub(crate) fn check_call(status: std::os::raw::c_int) -> Result<()> {
    if status == 0 {
        Ok(())
    } else {
        Err(Error::last())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kind_message_and_traceback() {
        let e = Error::parse("TypeError: argument 0 expected int\n  at frame");
        assert_eq!(e.kind(), "TypeError");
        assert_eq!(e.message(), "argument 0 expected int");
        assert_eq!(e.traceback(), Some("  at frame"));
        assert_eq!(e.to_string(), "TypeError: argument 0 expected int");
    }

    #[test]
    fn text_without_kind_is_tvm_error() {
        let e = Error::parse("something broke: badly (see log)");
        assert_eq!(e.kind(), "TVMError");
        assert_eq!(e.message(), "something broke: badly (see log)");
        let e = Error::parse("my.pkg.Custom_1: x");
        assert_eq!(e.kind(), "my.pkg.Custom_1");
        assert_eq!(e.message(), "x");
    }

    #[test]
    fn error_is_send_sync_std_error() {
        fn check<T: std::error::Error + Send + Sync + 'static>() {}
        check::<Error>();
    }
}
