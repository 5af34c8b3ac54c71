//! Layer 3, limits: what one client may ask of the doors anyone can reach,
//! so that one client's flood leaves every other client as it was. Each
//! client (`ClientKey`: an address, an IPv6 /64) has a token bucket per
//! door (`Door`); over its share it is answered `429 rate_limited` with
//! `retry-after`, before the door does any work.
//!
//! The doors, and where each is charged:
//! - `Ceremony`: every start and finish of a registration or a sign-in
//!   (an invite is redeemed by a registration's start), in `page::sign_in`.
//! - `PairStart`: a pairing started without the sink token (open pairing),
//!   `PairStatus`: a pairing's status read without it (by its poll key) and
//!   the pairing's plain page, in `control::http`.
//! - `Upload`: a file sent from the page, in `page::control_routes`.
//! - `Refused`: every answer `401`, on any route (a wrong or missing token
//!   or cookie), charged by the layer (`layer`), which refuses a client
//!   with none left before its request reaches a route: the events and
//!   control doors, and the page's, before they look at a token.
//!
//! Calls with the sink token or a machine's own token are not charged: they
//! are the operator's. What is held rather than asked (ceremonies under way,
//! pairings pending) is also bounded per client where it is kept
//! (`accounts`, `control`), with the same key. This module owns the rates
//! and the 429. It must not decide who a client is (`client` does); the
//! buckets are in memory, per process.

use crate::buckets::{Buckets, Rate};
use crate::client::{ClientAddr, ClientKey};
use crate::error::ApiError;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Clients whose buckets are held at once (a few hundred bytes each).
const CLIENTS_MAX: usize = 65_536;

/// A door anyone may knock on, with a bucket per client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Door {
    Ceremony,
    PairStart,
    PairStatus,
    Upload,
    Refused,
}

impl Door {
    const ALL: [Door; 5] = [
        Door::Ceremony,
        Door::PairStart,
        Door::PairStatus,
        Door::Upload,
        Door::Refused,
    ];

    /// Each door's share of one client. Wide enough for a household or an
    /// office behind one address, and for a daemon asking after its
    /// pairing every two seconds; far below what fills a global bound.
    fn rate(self) -> Rate {
        let s = Duration::from_secs;
        match self {
            // 20 at once, then one every 3 s: 20 sign-ins a minute.
            Door::Ceremony => Rate::new(20, s(3)),
            // 10 at once, then one every 6 s.
            Door::PairStart => Rate::new(10, s(6)),
            // 100 at once, then 5 a second: ten pairings polled at once.
            Door::PairStatus => Rate::new(100, Duration::from_millis(200)),
            // 30 at once, then one every 2 s.
            Door::Upload => Rate::new(30, s(2)),
            // 100 refusals at once, then 2 a second.
            Door::Refused => Rate::new(100, Duration::from_millis(500)),
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// What the client did too often, for its 429.
    fn words(self) -> &'static str {
        match self {
            Door::Ceremony => "too many sign-ins and registrations from your address",
            Door::PairStart => "too many pairings started from your address",
            Door::PairStatus => "too many pairing checks from your address",
            Door::Upload => "too many files sent from your address",
            Door::Refused => {
                "too many refused requests from your address (a wrong token, or signed out)"
            }
        }
    }
}

/// Every client's buckets.
pub struct Limits {
    buckets: Buckets<ClientKey>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits::new()
    }
}

impl Limits {
    pub fn new() -> Limits {
        Limits {
            buckets: Buckets::new(Door::ALL.iter().map(|d| d.rate()).collect(), CLIENTS_MAX),
        }
    }
}

/// The request's client and its buckets, for a door to charge.
#[derive(Clone)]
pub struct Quota {
    client: ClientKey,
    limits: Arc<Limits>,
}

impl Quota {
    /// Takes one of the client's tokens for `door`; none left, its 429.
    pub fn take(&self, door: Door) -> Result<(), ApiError> {
        self.limits
            .buckets
            .take(&self.client, door.index(), Instant::now())
            .map_err(|wait| ApiError::rate_limited(door.words(), wait))
    }

    /// The client, as kept with what it holds (a ceremony, a pairing).
    pub fn client(&self) -> String {
        self.client.to_string()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Quota {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Quota, ApiError> {
        parts.extensions.get::<Quota>().cloned().ok_or_else(|| {
            tracing::error!("a route asks for a client's quota outside the limits layer");
            ApiError::bare(StatusCode::INTERNAL_SERVER_ERROR, "internal")
        })
    }
}

/// The layer, inside `client::resolve`: the request's `Quota`; a client
/// with no refusals left is answered 429 before any route looks at its
/// token, and each 401 answered takes one.
pub async fn layer(State(limits): State<Arc<Limits>>, mut req: Request, next: Next) -> Response {
    let Some(addr) = req.extensions().get::<ClientAddr>().copied() else {
        tracing::error!("the limits layer runs outside client::resolve");
        return ApiError::bare(StatusCode::INTERNAL_SERVER_ERROR, "internal").into_response();
    };
    let quota = Quota {
        client: addr.key(),
        limits,
    };
    let refused = Door::Refused.index();
    if let Err(wait) = quota
        .limits
        .buckets
        .peek(&quota.client, refused, Instant::now())
    {
        return ApiError::rate_limited(Door::Refused.words(), wait).into_response();
    }
    req.extensions_mut().insert(quota.clone());
    let resp = next.run(req).await;
    if resp.status() == StatusCode::UNAUTHORIZED {
        let _ = quota
            .limits
            .buckets
            .take(&quota.client, refused, Instant::now());
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_door_is_counted_per_client() {
        let limits = Arc::new(Limits::new());
        let quota = |ip: &str| Quota {
            client: ClientAddr(ip.parse().unwrap()).key(),
            limits: Arc::clone(&limits),
        };
        let a = quota("192.0.2.1");
        let burst = Door::Ceremony.rate().burst;
        for _ in 0..burst {
            a.take(Door::Ceremony).unwrap();
        }
        let refused = a.take(Door::Ceremony).unwrap_err();
        assert!(
            refused.to_string().starts_with("429 rate_limited"),
            "{refused}"
        );
        // Another door of the same client, and the same door of another.
        a.take(Door::PairStart).unwrap();
        quota("192.0.2.2").take(Door::Ceremony).unwrap();
        // The same /64 is the same client.
        let v6 = quota("2001:db8::1");
        for _ in 0..burst {
            v6.take(Door::Ceremony).unwrap();
        }
        assert!(quota("2001:db8::ffff").take(Door::Ceremony).is_err());
        assert!(quota("2001:db8:0:1::1").take(Door::Ceremony).is_ok());
        assert_eq!(limits.buckets.len(), 4);
    }
}
