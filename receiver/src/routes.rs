//! Layer 6, routes: the receiver's one router, put together from its sides:
//! the well-known document (`discovery`), the events side, the control side
//! and the page when they are on, the test doors in a build with the
//! `test-doors` feature only, a 404 for everything else, and the layers
//! over all of them.
//!
//! This module owns that assembly and the order of the layers. Outermost is
//! `client::resolve` (who is asking, through the trusted proxies, and the
//! request's log span); inside it `limits::layer` (each client's share: the
//! doors charge it, and a client with too many refusals is stopped before
//! any route looks at its token). It must not handle a request itself
//! beyond the well-known document and the 404.

use crate::check::SUPPORTED;
use crate::client::{self, Proxies};
use crate::control::{self, CONTROL_PATH, Control, ControlOptions};
use crate::error::ApiError;
use crate::events::{self, EVENTS_PATH, Events, Settings};
use crate::limits::{self, Limits};
use crate::page::{self, Page};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router, middleware};
use serde_json::{Value, json};
use std::sync::Arc;

/// The sides a receiver serves.
pub struct Sides {
    pub events: Arc<Events>,
    pub control: Option<Arc<Control>>,
    pub page: Option<Arc<Page>>,
}

/// The well-known document (`schemas/well-known.json`).
pub fn discovery(events: &Settings, control: Option<&ControlOptions>) -> Value {
    let mut doc = json!({
        "protocol": SUPPORTED,
        "max_tier": events.max_tier,
        "capabilities": ["events", "backfill", "forget"],
        "auth": ["bearer"],
        "endpoints": {"events": EVENTS_PATH},
        "batch": {"max_events": events.max_events, "max_bytes": events.max_bytes},
    });
    if let Some(c) = control {
        doc["capabilities"]
            .as_array_mut()
            .expect("a list")
            .push(json!("control"));
        doc["endpoints"]["control"] = json!(CONTROL_PATH);
        doc["control"] = c.discovery();
    }
    doc
}

/// The receiver's router: `sides`, with clients read through `proxies` and
/// held to their share by `limits`.
pub fn router(sides: &Sides, proxies: Arc<Proxies>, limits: Arc<Limits>) -> Router {
    let doc = Arc::new(discovery(
        &sides.events.settings,
        sides.control.as_ref().map(|c| c.options()),
    ));
    let mut app = Router::new()
        .route("/.well-known/sessionpipe", get(well_known))
        .with_state(doc)
        .merge(events::router(Arc::clone(&sides.events)));
    if let Some(c) = &sides.control {
        app = app.merge(control::router(Arc::clone(c)));
    }
    if let Some(p) = &sides.page {
        app = app.merge(page::router(Arc::clone(p)));
    }
    #[cfg(feature = "test-doors")]
    {
        app = app.merge(events::doors::router(Arc::clone(&sides.events)));
        if let Some(c) = &sides.control {
            app = app.merge(control::doors::router(Arc::clone(c)));
        }
    }
    app.fallback(not_found)
        .layer(middleware::from_fn_with_state(limits, limits::layer))
        .layer(middleware::from_fn_with_state(proxies, client::resolve))
}

async fn well_known(State(doc): State<Arc<Value>>) -> Json<Value> {
    Json(Value::clone(&doc))
}

async fn not_found() -> ApiError {
    ApiError::bare(StatusCode::NOT_FOUND, "not_found")
}
