//! The page's routes: its files (`assets`) and its API under `/app/api/`
//! (`sign_in`, `board_routes`, `control_routes`, `push_routes`), every one
//! behind the guard on state-changing calls (`guard`).
//!
//! This module owns that assembly. A new route added to any of them is
//! guarded without asking.

use super::state::Page;
use super::{assets, board_routes, control_routes, guard, push_routes, sign_in};
use axum::Router;
use axum::middleware;
use std::sync::Arc;

/// The page's routes, with its state.
pub fn router(page: Arc<Page>) -> Router {
    Router::new()
        .merge(assets::routes())
        .merge(sign_in::routes())
        .merge(board_routes::routes())
        .merge(control_routes::routes())
        .merge(push_routes::routes())
        .route_layer(middleware::from_fn_with_state(
            Arc::clone(&page),
            guard::from_the_page,
        ))
        .with_state(page)
}
