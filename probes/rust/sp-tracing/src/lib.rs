// SPDX-License-Identifier: MIT
//! sptrace for programs instrumented with `tracing`: a
//! [`tracing_subscriber::Layer`] that makes every span an sptrace query.
//!
//! ```
//! use tracing::info_span;
//!
//! sp_tracing::init(); // the one added line: spans become sptrace queries
//!
//! let span = info_span!("parse");
//! span.in_scope(|| { /* the work */ });
//! ```
//!
//! Or, next to other layers: `tracing_subscriber::registry().with(sp_tracing::layer())`.
//! Then `sudo sptrace -- ./prog` prints a row per span name.
//!
//! # What a span counts
//!
//! A span is one invocation of the query named by the span's name (its
//! metadata name, e.g. `info_span!("parse")` is `parse`). Each time the span
//! is entered and exited is a piece of its work on the entering thread; an
//! async span (`future.instrument(span)`) is entered and exited at every
//! poll, on whichever thread polls it. sptrace adds the pieces up and counts
//! the span once, when it closes: its *Time* is the time it was entered
//! (its busy time, not the time it existed), its *Self* that less the time
//! of the spans entered inside it; the latency histogram has one sample per
//! span. These are the async queries of [`sp_probe::Instrument`]; see
//! "Async queries" in docs/instrumenting.md.
//!
//! Spans created before sptrace attached, or never entered while it was
//! attached, are not counted.
//!
//! # A field as the key
//!
//! [`SpLayer::key_field`] names a field whose value keys each span: with
//! `sptrace --query-keys` a span name has a row per value (`fetch(7)`,
//! `fetch(eu-west)`), as rustc's query keys do; without, the spans of a
//! name are one row. An integer or bool field is an integer key; a string
//! field, or any other (its `Debug` text), a text key. A span without the
//! field is counted under its name.
//!
//! # Events as marks
//!
//! [`SpLayer::marks`] makes events of a level (and the more severe ones)
//! `sp:mark` probes, named by the event's metadata name (`event
//! src/main.rs:42`), with an integer field as the key
//! ([`SpLayer::mark_key`]); `sptrace record` records them and `sptrace
//! export --chrome` shows them.
//!
//! # Cost
//!
//! Untraced, a span's enter and exit cost the registry's work and one load
//! of a semaphore each. Traced, a span entered once costs its name's lookup
//! when it is made and three probes: BEGIN and END at its enter and exit,
//! and `sp:query_finish` when it closes, which adds no time to the span
//! (`bench/run_tracing_bench.sh` measures it against no subscriber and
//! against `tracing-subscriber`'s fmt layer).
#![warn(missing_docs)]

use sp_probe::{AsyncQuery, Name};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id};
use tracing_core::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The layer: every span an sptrace query, chosen events marks.
#[derive(Clone, Debug, Default)]
pub struct SpLayer {
    mark_level: Option<Level>,
    mark_key: Option<&'static str>,
    span_key: Option<&'static str>,
}

/// A new [`SpLayer`]: spans only, no marks.
pub fn layer() -> SpLayer {
    SpLayer::default()
}

/// Installs a registry with [`layer()`] as the global default subscriber.
///
/// # Panics
///
/// If a global default subscriber was set already; add [`layer()`] to that
/// subscriber instead.
pub fn init() {
    use tracing_subscriber::layer::SubscriberExt;
    let subscriber = tracing_subscriber::registry().with(layer());
    tracing_core::dispatcher::set_global_default(tracing_core::Dispatch::new(subscriber))
        .expect("sp_tracing::init: a global tracing subscriber is set already");
}

impl SpLayer {
    /// Events at `level` or more severe become `sp:mark` probes
    /// (`Level::INFO`: INFO, WARN and ERROR events).
    pub fn marks(mut self, level: Level) -> SpLayer {
        self.mark_level = Some(level);
        self
    }

    /// The mark's key: the event's field `field` when it is an integer
    /// (or a bool); 0 otherwise.
    pub fn mark_key(mut self, field: &'static str) -> SpLayer {
        self.mark_key = Some(field);
        self
    }

    /// A span's key: its field `field` (see "A field as the key" above).
    ///
    /// ```
    /// use tracing_subscriber::layer::SubscriberExt;
    ///
    /// let subscriber = tracing_subscriber::registry()
    ///     .with(sp_tracing::layer().key_field("shard"));
    /// tracing::subscriber::with_default(subscriber, || {
    ///     tracing::info_span!("fetch", shard = 3u64).in_scope(|| {});
    ///     tracing::info_span!("fetch", shard = "eu-west").in_scope(|| {});
    /// });
    /// ```
    pub fn key_field(mut self, field: &'static str) -> SpLayer {
        self.span_key = Some(field);
        self
    }

    /// The invocation of a new span: keyed by its key field's value if
    /// it has one.
    fn query(&self, attrs: &Attributes<'_>) -> AsyncQuery {
        let name = Name::intern(attrs.metadata().name());
        let mut v = SpanKeyVisitor { field: self.span_key, key: SpanKey::None };
        if self.span_key.is_some() {
            attrs.record(&mut v);
        }
        match v.key {
            SpanKey::None => AsyncQuery::new(name),
            SpanKey::Int(k) => AsyncQuery::with_key(name, k),
            SpanKey::Text(t) => AsyncQuery::with_text_key(name, t.as_bytes()),
        }
    }
}

/// A span's invocation, in its extensions: made when the span is made
/// while a tracer watches, for the span's whole life.
struct SpSpan {
    query: AsyncQuery,
    /// A piece ended with `poll_end(false)`: sptrace holds its time until
    /// the span closes.
    entered: AtomicBool,
}

impl<S> Layer<S> for SpLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !AsyncQuery::watched() {
            return;
        }
        if let Some(span) = ctx.span(id) {
            let query = self.query(attrs);
            span.extensions_mut().insert(SpSpan { query, entered: AtomicBool::new(false) });
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if !AsyncQuery::watched() {
            return;
        }
        if let Some(span) = ctx.span(id) {
            if let Some(s) = span.extensions().get::<SpSpan>() {
                s.query.poll_begin();
            }
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        if !AsyncQuery::watched() {
            return;
        }
        if let Some(span) = ctx.span(id) {
            if let Some(s) = span.extensions().get::<SpSpan>() {
                s.query.poll_end(false);
                s.entered.store(true, Ordering::Relaxed);
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if !AsyncQuery::watched() {
            return;
        }
        if let Some(span) = ctx.span(&id) {
            if let Some(s) = span.extensions().get::<SpSpan>() {
                if s.entered.load(Ordering::Relaxed) {
                    s.query.finish();
                }
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let level = match self.mark_level {
            Some(l) => l,
            None => return,
        };
        // Level orders by verbosity: TRACE is the greatest.
        if *event.metadata().level() > level || !sp_probe::sp_enabled!() {
            return;
        }
        let mut key = KeyVisitor { field: self.mark_key, key: 0 };
        if self.mark_key.is_some() {
            event.record(&mut key);
        }
        Name::intern(event.metadata().name()).mark(key.key);
    }
}

/// Finds the mark key's field among an event's fields.
struct KeyVisitor {
    field: Option<&'static str>,
    key: u64,
}

impl Visit for KeyVisitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if Some(field.name()) == self.field {
            self.key = value;
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if Some(field.name()) == self.field {
            self.key = value as u64;
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if Some(field.name()) == self.field {
            self.key = value as u64;
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn fmt::Debug) {}
}

/// A span's key field's value.
enum SpanKey {
    None,
    Int(u64),
    Text(String),
}

/// Finds the key field among a new span's fields.
struct SpanKeyVisitor {
    field: Option<&'static str>,
    key: SpanKey,
}

impl Visit for SpanKeyVisitor {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if Some(field.name()) == self.field {
            self.key = SpanKey::Int(value);
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if Some(field.name()) == self.field {
            self.key = SpanKey::Int(value as u64);
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if Some(field.name()) == self.field {
            self.key = SpanKey::Int(value as u64);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if Some(field.name()) == self.field {
            self.key = SpanKey::Text(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if Some(field.name()) == self.field {
            self.key = SpanKey::Text(format!("{:?}", value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn spans_and_events_run_untraced() {
        let subscriber = tracing_subscriber::registry()
            .with(layer().marks(Level::INFO).mark_key("id"));
        tracing_core::dispatcher::with_default(&tracing_core::Dispatch::new(subscriber), || {
            let outer = tracing::info_span!("t_outer");
            let _g = outer.enter();
            let inner = tracing::debug_span!("t_inner", id = 3u64);
            inner.in_scope(|| tracing::info!(id = 7u64, "an event"));
            tracing::warn!(id = -1i64, "another");
        });
    }
}
