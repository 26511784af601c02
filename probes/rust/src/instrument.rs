// SPDX-License-Identifier: MIT
//! Async queries: a future whose polls are a query's busy time.
//!
//! A future runs in polls, each on whichever thread of the runtime polls
//! it, with other futures' polls in between on the same thread. A guard
//! held across `.await` would BEGIN on one thread and END on another, or
//! nest wrongly with the futures interleaved there. So each poll is its
//! own BEGIN and END on the polling thread (`sp:query_begin`, then
//! `sp:query_poll_end(name, id, ready)`), which nests correctly with
//! whatever else that thread runs, and sptrace adds the polls of one
//! invocation together under its `id` and counts the invocation once, at
//! the poll that completes it (bpf/query.bpf.c, `poll_end_at`), or at
//! `sp:query_finish(name, id)` for one dropped or closed after its last
//! piece (`finish_at`).

use crate::{IntegerOrPointer, Name};
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicU64, Ordering};
use core::task::{Context, Poll};

/// Invocation ids, unique per name in the process: sptrace keys an
/// invocation by name pointer and id, and another object of the process
/// with its own copy of this crate (a plugin) has its own names.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One invocation of an async query, polled in pieces: the building block
/// of [`Instrumented`] and of instrumentation layers (the `sp-tracing`
/// crate makes each `tracing` span one). Each piece of work is a
/// [`poll_begin`](AsyncQuery::poll_begin) and a
/// [`poll_end`](AsyncQuery::poll_end) on one thread, with nothing of
/// another piece of this invocation in between on that thread; the pieces
/// may run on any threads. sptrace counts the invocation once, at the
/// `poll_end(true)` that completes it (or at [`finish`](AsyncQuery::finish)),
/// with the sum of its pieces as its time.
///
/// Fire nothing unless [`AsyncQuery::watched`] says a tracer is attached;
/// an invocation begun while watched should be finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncQuery {
    name: Name,
    id: u64,
    key: QueryKey,
}

/// An invocation's key (`--query-keys`: a row per key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QueryKey {
    None,
    Int(u64),
    /// The interned copy of a text key.
    Text(Name),
}

impl AsyncQuery {
    /// Is a tracer watching async queries (`sp:query_poll_end`) in this
    /// executable or shared object? One load of its semaphore. Without it,
    /// a tracer that knows `sp:query_begin` but not the poll END (an older
    /// sptrace, bpftrace on `query_begin` alone) would see BEGINs that
    /// never end.
    #[inline(always)]
    pub fn watched() -> bool {
        poll_end_watched()
    }

    /// A new invocation of the query `name`, with an id no other
    /// invocation of this name in this process has.
    #[inline]
    pub fn new(name: Name) -> AsyncQuery {
        AsyncQuery { name, id: NEXT_ID.fetch_add(1, Ordering::Relaxed), key: QueryKey::None }
    }

    /// A new invocation of the query `name` with an integer `key`: with
    /// `sptrace --query-keys` it has a row of its own per key, `name(key)`,
    /// as [`Name::query_begin_key`]'s queries do; else it counts in `name`.
    ///
    /// ```
    /// let q = sp_probe::AsyncQuery::with_key(sp_probe::sp_name!("fetch"), 7u32);
    /// if sp_probe::AsyncQuery::watched() {
    ///     q.poll_begin();
    ///     q.poll_end(true);
    /// }
    /// ```
    #[inline]
    pub fn with_key<K: IntegerOrPointer>(name: Name, key: K) -> AsyncQuery {
        AsyncQuery { key: QueryKey::Int(key.sp_arg()), ..AsyncQuery::new(name) }
    }

    /// A new invocation of the query `name` with a text key (any bytes):
    /// with `--query-keys` a row per key text, `name(text)`, the same row
    /// as `sp_query_begin_key_str!`'s. The text is interned now
    /// ([`Name::intern_bytes`]): make keyed invocations while
    /// [`AsyncQuery::watched`].
    ///
    /// ```
    /// let q = sp_probe::AsyncQuery::with_text_key(sp_probe::sp_name!("fetch"), b"eu-west");
    /// if sp_probe::AsyncQuery::watched() {
    ///     q.poll_begin();
    ///     q.poll_end(true);
    /// }
    /// ```
    #[inline]
    pub fn with_text_key(name: Name, key: &[u8]) -> AsyncQuery {
        AsyncQuery { key: QueryKey::Text(Name::intern_bytes(key)), ..AsyncQuery::new(name) }
    }

    /// The query's name.
    pub fn name(&self) -> Name {
        self.name
    }

    /// A piece of the invocation starts on this thread (`sp:query_begin`).
    #[inline(always)]
    pub fn poll_begin(&self) {
        match self.key {
            QueryKey::None => self.name.query_begin(),
            QueryKey::Int(k) => self.name.query_begin_key(k),
            QueryKey::Text(k) => self.name.query_begin_text_key(k),
        }
    }

    /// The piece ends on this thread; `ready`: the invocation is complete
    /// (`sp:query_poll_end(name, id, ready)`; a keyed invocation adds its
    /// key, and a text key a fifth argument, 1, as the keyed BEGINs do).
    #[inline(always)]
    pub fn poll_end(&self, ready: bool) {
        let (n, id) = (self.name.as_ptr(), self.id);
        match self.key {
            QueryKey::None => crate::sp_probe!(query_poll_end, n, id, ready),
            QueryKey::Int(k) => crate::sp_probe!(query_poll_end, n, id, ready, k),
            QueryKey::Text(k) => {
                crate::sp_probe!(query_poll_end, n, id, ready, k.as_ptr(), 1u64)
            }
        }
    }

    /// Completes an invocation whose last piece ended with
    /// `poll_end(false)` (a future dropped before it completed, a span
    /// closed after its last exit): sptrace counts it with the pieces'
    /// time, and forgets its id. `sp:query_finish(name, id)` (a keyed
    /// invocation adds its key as `poll_end` does) where the tracer
    /// watches it: one probe and no time of its own. A tracer that does
    /// not know it (an older sptrace) gets an empty last piece instead, a
    /// BEGIN and a `poll_end(true)` back to back, whose length (the
    /// probes' own cost) is added to the invocation.
    #[inline]
    pub fn finish(&self) {
        if finish_watched() {
            let (n, id) = (self.name.as_ptr(), self.id);
            match self.key {
                QueryKey::None => crate::sp_probe!(query_finish, n, id),
                QueryKey::Int(k) => crate::sp_probe!(query_finish, n, id, k),
                QueryKey::Text(k) => crate::sp_probe!(query_finish, n, id, k.as_ptr(), 1u64),
            }
        } else {
            self.poll_begin();
            self.poll_end(true);
        }
    }
}

/// The value of `sp:query_finish`'s semaphore.
#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn finish_watched() -> bool {
    crate::__sp_sema!(query_finish) != 0
}

#[cfg(not(all(feature = "enabled", target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
fn finish_watched() -> bool {
    false
}

/// The value of `sp:query_poll_end`'s semaphore, non-zero while a tracer
/// is attached to it.
#[cfg(all(feature = "enabled", target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn poll_end_watched() -> bool {
    crate::__sp_sema!(query_poll_end) != 0
}

#[cfg(not(all(feature = "enabled", target_arch = "x86_64", target_os = "linux")))]
#[inline(always)]
fn poll_end_watched() -> bool {
    false
}

/// How an [`Instrumented`] names its query: a literal's [`Name`], or a
/// text interned at the first traced poll.
#[derive(Clone, Copy, Debug)]
enum QueryName {
    Name(Name),
    Text(&'static str),
}

/// Turns any future into an async query: `fut.sp_instrument("fetch")`.
///
/// The query's *Time* is the future's busy time, the sum of the durations
/// of its polls (including the polls of instrumented futures it awaits);
/// *Self* is that less the time of queries that ran inside its polls; the
/// count is one per completed invocation (or per future dropped before it
/// completed). The time the future spends suspended, waiting to be polled
/// again, is in neither. See "Async queries" in docs/instrumenting.md.
///
/// ```
/// use sp_probe::Instrument;
///
/// async fn fetch(n: u32) -> u32 {
///     n + 1
/// }
///
/// # fn block_on<F: core::future::Future>(f: F) -> F::Output {
/// #     use core::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
/// #     fn raw() -> RawWaker { RawWaker::new(core::ptr::null(), &VT) }
/// #     static VT: RawWakerVTable = RawWakerVTable::new(|_| raw(), |_| {}, |_| {}, |_| {});
/// #     let w = unsafe { Waker::from_raw(raw()) };
/// #     let mut f = Box::pin(f);
/// #     loop { if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&w)) { return v } }
/// # }
/// let v = block_on(fetch(1).sp_instrument("fetch"));
/// # assert_eq!(v, 2);
/// // or with a literal's Name, which needs no interning:
/// let v = block_on(fetch(2).sp_instrument_name(sp_probe::sp_name!("fetch")));
/// # assert_eq!(v, 3);
/// ```
pub trait Instrument: Future + Sized {
    /// This future as the async query `name`. The text is interned
    /// ([`Name::intern`]) at its first poll while a tracer is attached.
    fn sp_instrument(self, name: &'static str) -> Instrumented<Self> {
        Instrumented::new(self, QueryName::Text(name))
    }

    /// This future as the async query named by `name` (from `sp_name!`).
    fn sp_instrument_name(self, name: Name) -> Instrumented<Self> {
        Instrumented::new(self, QueryName::Name(name))
    }
}

impl<F: Future> Instrument for F {}

/// A future instrumented as an async query: see [`Instrument`]. It polls
/// the future it wraps and gives its output unchanged.
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct Instrumented<F> {
    inner: F,
    name: QueryName,
    /// The invocation once a traced poll returned Pending: sptrace then
    /// holds its busy time so far, to be closed by a ready poll.
    pending: Option<AsyncQuery>,
}

impl<F> Instrumented<F> {
    fn new(inner: F, name: QueryName) -> Self {
        Instrumented { inner, name, pending: None }
    }

    fn name(&mut self) -> Name {
        match self.name {
            QueryName::Name(n) => n,
            QueryName::Text(t) => {
                let n = Name::intern(t);
                self.name = QueryName::Name(n);
                n
            }
        }
    }

    /// The future it wraps.
    pub fn inner(&self) -> &F {
        &self.inner
    }
}

impl<F: Future> Future for Instrumented<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is pinned structurally: it is never moved out,
        // and Drop below does not move it.
        let this = unsafe { self.get_unchecked_mut() };
        if !poll_end_watched() {
            return unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        }
        // The invocation (its id) is made before the poll's BEGIN, so
        // that no fetch_add is timed.
        let q = match this.pending {
            Some(q) => q,
            None => AsyncQuery::new(this.name()),
        };
        q.poll_begin();
        let r = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        q.poll_end(r.is_ready());
        this.pending = if r.is_ready() { None } else { Some(q) };
        r
    }
}

impl<F> Drop for Instrumented<F> {
    fn drop(&mut self) {
        // Dropped while suspended (select!, a timeout, an aborted task):
        // the invocation ends here, with the busy time of its polls.
        if let Some(q) = self.pending {
            if poll_end_watched() {
                q.finish();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::task::{RawWaker, RawWakerVTable, Waker};

    fn noop_waker() -> Waker {
        fn raw() -> RawWaker {
            RawWaker::new(core::ptr::null(), &VT)
        }
        static VT: RawWakerVTable = RawWakerVTable::new(|_| raw(), |_| {}, |_| {}, |_| {});
        // SAFETY: the vtable does nothing.
        unsafe { Waker::from_raw(raw()) }
    }

    /// Pending `n` times, then Ready(polls).
    struct Yields {
        n: u32,
        polls: u32,
    }

    impl Future for Yields {
        type Output = u32;
        fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
            self.polls += 1;
            if self.polls > self.n {
                Poll::Ready(self.polls)
            } else {
                Poll::Pending
            }
        }
    }

    #[test]
    fn polls_pass_through_untraced() {
        let w = noop_waker();
        let mut cx = Context::from_waker(&w);
        let mut f = Box::pin(Yields { n: 3, polls: 0 }.sp_instrument("t_async"));
        let mut pending = 0;
        let v = loop {
            match f.as_mut().poll(&mut cx) {
                Poll::Ready(v) => break v,
                Poll::Pending => pending += 1,
            }
        };
        assert_eq!((pending, v), (3, 4));
        assert_eq!(f.inner().polls, 4);
        // Dropped while suspended: no probe untraced, no panic.
        let mut g = Box::pin(Yields { n: 5, polls: 0 }.sp_instrument_name(crate::sp_name!("t_async")));
        assert!(g.as_mut().poll(&mut cx).is_pending());
        drop(g);
    }
}
