//! An answer's body on its way back from the API to Claude Code: each chunk
//! as it comes, joined with the chunks that came right behind it, so that
//! a burst of them goes out in one write.
//!
//! It owns when a chunk leaves: once the upstream has nothing more ready.
//! After a chunk comes, the upstream's connection gets turns of the runtime
//! to hand over what it already holds (an HTTP/1 connection hands its body
//! over one chunk at a time, each only after the reader took the last, and
//! its task may need two turns to come round), and whatever comes in them
//! goes with it. Without this each SSE event was a write of its own: 22
//! writes for an answer of 20 events, and 100 streams at once cost three
//! times the CPU of the straight fetch (BENCHMARKS.md, issue 35).
//! The first chunk may also go with the answer's head (`Joined::first`):
//! hyper writes a head alone when its body has nothing ready, and the
//! client then reads twice; with this, 100 streams at once through the
//! proxy made 5 writes each instead of 7.
//! It must not wait for data that has not arrived (`IDLE_TURNS` turns in a
//! row that bring nothing end the wait), join more than `MAX_JOINED` bytes or
//! for more than `MAX_TURNS` turns, nor drop, reorder or keep a byte or an
//! error.
//!
//! It also owns when a silent upstream is given up (`Watched`: the read
//! timeout reqwest kept before, without its clock read and timer reset on
//! every chunk).

use axum::body::Bytes;
use futures_util::Stream;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Bytes joined into one chunk at most.
pub const MAX_JOINED: usize = 64 * 1024;

/// Turns given to the upstream for one joined chunk at most: under load a
/// turn is a pass over every ready task, so a chunk is never held for long.
pub const MAX_TURNS: u32 = 32;

/// Turns in a row that brought nothing, after which what is held goes: one
/// was measured to catch no chunk at all, two caught six on average.
pub const IDLE_TURNS: u32 = 2;

/// `upstream`'s chunks, joined as the module says.
pub struct Joined<S, E> {
    upstream: S,
    held: Vec<Bytes>,
    len: usize,
    turns: u32,
    /// Turns in a row that brought nothing.
    idle: u32,
    /// How the upstream ended (`Some(None)`: its end, or an error already
    /// passed on), to pass on once what is held is out.
    ended: Option<Option<E>>,
}

impl<S, E> Joined<S, E> {
    pub fn new(upstream: S) -> Self {
        Joined {
            upstream,
            held: Vec::new(),
            len: 0,
            turns: 0,
            idle: 0,
            ended: None,
        }
    }

    /// What is held, as one chunk (a lone one as it came, without a copy).
    fn take(&mut self) -> Bytes {
        let (held, len) = (
            std::mem::take(&mut self.held),
            std::mem::take(&mut self.len),
        );
        (self.turns, self.idle) = (0, 0);
        if held.len() == 1 {
            return held.into_iter().next().unwrap_or_default();
        }
        let mut joined = Vec::with_capacity(len);
        for chunk in held {
            joined.extend_from_slice(&chunk);
        }
        Bytes::from(joined)
    }
}

impl<S, E> Stream for Joined<S, E>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        while this.ended.is_none() && this.len < MAX_JOINED {
            match Pin::new(&mut this.upstream).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    if !chunk.is_empty() {
                        this.len += chunk.len();
                        this.held.push(chunk);
                        this.idle = 0;
                    }
                }
                Poll::Ready(Some(Err(e))) => this.ended = Some(Some(e)),
                Poll::Ready(None) => this.ended = Some(None),
                Poll::Pending if this.held.is_empty() => return Poll::Pending,
                Poll::Pending if this.idle < IDLE_TURNS && this.turns < MAX_TURNS => {
                    // Woken at once, behind the tasks already ready: the
                    // upstream's, woken when its last chunk was taken, among them.
                    (this.idle, this.turns) = (this.idle + 1, this.turns + 1);
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Pending => break,
            }
        }
        if !this.held.is_empty() {
            return Poll::Ready(Some(Ok(this.take())));
        }
        match this.ended.as_mut().map(Option::take) {
            Some(Some(e)) => Poll::Ready(Some(Err(e))),
            Some(None) => Poll::Ready(None),
            None => Poll::Pending,
        }
    }
}

impl<S, E> Joined<S, E>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: Unpin,
{
    /// The first chunk, if the upstream hands it over within `IDLE_TURNS`
    /// turns of asking (then joined as `poll_next` joins), so that the
    /// answer's head goes out in the same write as it: the API sends a
    /// stream's head and first event together, and hyper writes a head
    /// alone whenever the body it is given has nothing yet (one more write
    /// and one more read on the client's side for every answer). `Pending`:
    /// nothing came in those turns, and what the stream holds stays in it.
    pub async fn first(&mut self) -> Poll<Option<Result<Bytes, E>>> {
        let mut empty_turns = 0;
        std::future::poll_fn(|cx| match Pin::new(&mut *self).poll_next(cx) {
            Poll::Ready(item) => Poll::Ready(Poll::Ready(item)),
            // Holding a chunk: `poll_next` gives itself its turns.
            Poll::Pending if !self.held.is_empty() => Poll::Pending,
            Poll::Pending if empty_turns < IDLE_TURNS => {
                empty_turns += 1;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Pending => Poll::Ready(Poll::Pending),
        })
        .await
    }
}

/// Looks a read timeout is measured in: an upstream is given up when
/// `LOOKS` looks in a row (a timer, `timeout / LOOKS` apart) found that
/// nothing came, between `timeout` and `timeout + timeout / LOOKS` after its
/// last chunk.
pub const LOOKS: u32 = 10;

/// `upstream`, cut with a `TimedOut` error once it has sent nothing for its
/// read timeout. A chunk costs a flag (reqwest's per-read timeout read the
/// clock twice and moved its timer in the runtime's wheel, under its lock,
/// for each one); the timer is only looked at while the upstream has
/// nothing, and moved once a look.
pub struct Watched<S> {
    upstream: S,
    look: Duration,
    next: Pin<Box<tokio::time::Sleep>>,
    /// A chunk (or the end) came since the last look.
    heard: bool,
    /// Looks in a row that found nothing new.
    silent: u32,
}

impl<S> Watched<S> {
    pub fn new(upstream: S, timeout: Duration) -> Self {
        let look = timeout / LOOKS;
        Watched {
            upstream,
            look,
            next: Box::pin(tokio::time::sleep(look)),
            heard: false,
            silent: 0,
        }
    }
}

impl<S> Stream for Watched<S>
where
    S: Stream<Item = Result<Bytes, std::io::Error>> + Unpin,
{
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.silent >= LOOKS {
            // Cut: the error went, nothing follows it.
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = Pin::new(&mut this.upstream).poll_next(cx) {
            this.heard = true;
            return Poll::Ready(item);
        }
        while this.next.as_mut().poll(cx).is_ready() {
            if std::mem::take(&mut this.heard) {
                this.silent = 0;
            } else {
                this.silent += 1;
            }
            if this.silent >= LOOKS {
                return Poll::Ready(Some(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the API sent nothing for the read timeout",
                ))));
            }
            // From now, not from the deadline: a late runtime must not
            // count looks that no time passed between.
            let at = tokio::time::Instant::now() + this.look;
            this.next.as_mut().reset(at);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    type Item = Result<Bytes, &'static str>;

    fn channel() -> (
        tokio::sync::mpsc::UnboundedSender<Item>,
        Joined<impl Stream<Item = Item> + Unpin, &'static str>,
    ) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Item>();
        let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        (tx, Joined::new(stream))
    }

    #[tokio::test]
    async fn chunks_already_there_go_as_one_and_a_lone_one_goes_without_waiting() {
        let (tx, mut joined) = channel();
        for part in ["event: a\n\n", "event: b\n\n", "event: c\n\n"] {
            tx.send(Ok(Bytes::from_static(part.as_bytes()))).unwrap();
        }
        let first = joined.next().await.unwrap().unwrap();
        assert_eq!(&first[..], b"event: a\n\nevent: b\n\nevent: c\n\n");
        // Nothing behind it and the upstream still open: it goes anyway.
        tx.send(Ok(Bytes::from_static(b"event: d\n\n"))).unwrap();
        let lone = joined.next().await.unwrap().unwrap();
        assert_eq!(&lone[..], b"event: d\n\n");
        drop(tx);
        assert!(joined.next().await.is_none());
    }

    #[tokio::test]
    async fn what_was_held_goes_before_the_error_and_the_end() {
        let (tx, mut joined) = channel();
        tx.send(Ok(Bytes::from_static(b"one"))).unwrap();
        tx.send(Err("cut")).unwrap();
        tx.send(Ok(Bytes::from_static(b"never read"))).unwrap();
        assert_eq!(&joined.next().await.unwrap().unwrap()[..], b"one");
        assert_eq!(joined.next().await.unwrap().unwrap_err(), "cut");
        assert!(joined.next().await.is_none());

        let (tx, mut joined) = channel();
        tx.send(Ok(Bytes::from_static(b"last"))).unwrap();
        drop(tx);
        assert_eq!(&joined.next().await.unwrap().unwrap()[..], b"last");
        assert!(joined.next().await.is_none());
    }

    #[tokio::test]
    async fn a_joined_chunk_is_bounded() {
        let (tx, mut joined) = channel();
        let big = Bytes::from(vec![b'x'; MAX_JOINED / 2 + 1]);
        for _ in 0..3 {
            tx.send(Ok(big.clone())).unwrap();
        }
        drop(tx);
        let mut sizes = Vec::new();
        while let Some(chunk) = joined.next().await {
            sizes.push(chunk.unwrap().len());
        }
        assert_eq!(sizes, [2 * big.len(), big.len()]);
    }

    #[tokio::test]
    async fn the_first_chunk_is_taken_when_it_is_there_and_kept_when_it_comes_late() {
        // There: joined with what came behind it, ready for the head's write.
        let (tx, mut joined) = channel();
        for part in ["event: a\n\n", "event: b\n\n"] {
            tx.send(Ok(Bytes::from_static(part.as_bytes()))).unwrap();
        }
        let Poll::Ready(Some(Ok(first))) = joined.first().await else {
            panic!("the first chunk was there");
        };
        assert_eq!(&first[..], b"event: a\n\nevent: b\n\n");

        // Not there: `Pending` after a few turns, and the stream still has
        // everything that comes afterwards, in order.
        let (tx, mut joined) = channel();
        assert!(joined.first().await.is_pending());
        tx.send(Ok(Bytes::from_static(b"late"))).unwrap();
        drop(tx);
        assert_eq!(&joined.next().await.unwrap().unwrap()[..], b"late");
        assert!(joined.next().await.is_none());

        // An answer with no body: its end, at once.
        let (tx, mut joined) = channel();
        drop(tx);
        assert!(matches!(joined.first().await, Poll::Ready(None)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_upstream_is_cut_after_its_timeout_and_a_slow_one_is_not() {
        let timeout = Duration::from_secs(300);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<Bytes, std::io::Error>>();
        let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
        let mut watched = Watched::new(stream, timeout);
        // A chunk every half timeout, for five timeouts, then nothing (the
        // upstream still open): never cut while they come.
        tokio::spawn(async move {
            for _ in 0..10 {
                tokio::time::sleep(timeout / 2).await;
                tx.send(Ok(Bytes::from_static(b"ping"))).unwrap();
            }
            std::future::pending::<()>().await;
        });
        for _ in 0..10 {
            assert_eq!(&watched.next().await.unwrap().unwrap()[..], b"ping");
        }
        // Then nothing: cut no sooner than the timeout, and within a look.
        let last = tokio::time::Instant::now();
        let err = watched.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        let silent = last.elapsed();
        assert!(
            silent >= timeout && silent <= timeout + timeout / LOOKS,
            "{silent:?}"
        );
        assert!(watched.next().await.is_none(), "nothing after the cut");
    }
}
