//! Turning a kernel's panic buffer into an [`Error::KernelPanic`], and who it is
//! reported to: the [`Issuer`] of the launch.

use crate::Error;
use offload_mir::Body;

/// The words of the panic buffer the lowering's kernel ABI defines: `[count, site,
/// value0, value1, scratch...]`.
pub(crate) type PanicWords = [i64; PANIC_BUFFER_WORDS];

pub(crate) use offload_mir::abi::PANIC_BUFFER_WORDS;

/// The error for the first panic recorded in `words`, if any thread panicked.
pub(crate) fn decode(kernel: &str, body: &Body, words: &PanicWords) -> Option<Error> {
    if words[0] == 0 {
        return None;
    }
    let sites = body.panic_sites();
    let site = usize::try_from(words[1]).ok().and_then(|s| sites.get(s));
    let Some((msg, span)) = site else {
        return Some(Error::KernelPanic {
            kernel: kernel.to_string(),
            file: body.file.clone(),
            line: 0,
            column: 0,
            message: format!("a thread panicked at an unknown site ({})", words[1]),
        });
    };
    let message = msg.text(&words[2..4]);
    Some(Error::KernelPanic {
        kernel: kernel.to_string(),
        file: body.file.clone(),
        line: span.line,
        column: span.column,
        message,
    })
}

/// Who a launch's panic is reported to: the host thread that issued it, by a number of
/// this module's (a `ThreadId` needs `thread::current`, which a thread's last moments may
/// not offer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Issuer(u64);

impl Issuer {
    /// Stands for any thread whose locals are being destroyed.
    pub const LATE: Issuer = Issuer(u64::MAX);
}

/// Tells the hooks of [`on_issuer_exit`] when its thread ends.
struct IssuerGuard(Issuer);

impl Drop for IssuerGuard {
    fn drop(&mut self) {
        let hooks = EXIT_HOOKS.lock().map(|h| h.clone()).unwrap_or_default();
        for hook in hooks {
            hook(self.0);
        }
    }
}

thread_local! {
    static ISSUER: IssuerGuard = {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        IssuerGuard(Issuer(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)))
    };
}

static EXIT_HOOKS: std::sync::Mutex<Vec<fn(Issuer)>> = std::sync::Mutex::new(Vec::new());

/// The calling thread, as the issuer of the launches it makes.
pub(crate) fn issuer() -> Issuer {
    ISSUER.try_with(|guard| guard.0).unwrap_or(Issuer::LATE)
}

/// Calls `hook` with each issuer whose thread ends from now on, while its locals are
/// destroyed (so `hook` must not need them): a backend that keeps launches per issuer
/// hands them over there. Registering the same hook twice calls it once.
pub(crate) fn on_issuer_exit(hook: fn(Issuer)) {
    let mut hooks = EXIT_HOOKS.lock().unwrap_or_else(|p| p.into_inner());
    if !hooks.contains(&hook) {
        hooks.push(hook);
    }
}
