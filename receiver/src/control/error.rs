//! Why a control call fails: the caller's mistake or a state that refuses
//! it (`Refused`), or the store (`StoreError`), and the one answer each
//! becomes (`ApiError`).
//!
//! This module owns those errors and their statuses. It must not put a
//! token or a store's words into an answer.

use super::shapes;
use crate::db::DbError;
use crate::error::ApiError;
use axum::http::StatusCode;

/// Why the store failed (not a caller's mistake: those are `Refused`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("control store: {0}")]
    Db(#[from] DbError),
    #[error("control store: a stored {what} is not JSON")]
    Corrupt { what: &'static str },
}

/// Why a control request is refused; each has its status in the one
/// `ApiError` it becomes.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    Malformed(#[from] shapes::Malformed),
    #[error("unauthorized")]
    Unauthorized,
    #[error("{0}")]
    NotFound(&'static str),
    #[error("the pairing was approved already")]
    AlreadyApproved,
    #[error("the pairing expired")]
    Expired,
    #[error("{0}")]
    Full(&'static str),
    /// The client's share is taken; one of its own ends in `wait`.
    #[error("{what} from your address")]
    ClientFull {
        what: &'static str,
        wait: std::time::Duration,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<DbError> for Refused {
    fn from(e: DbError) -> Self {
        Refused::Store(e.into())
    }
}

impl From<Refused> for ApiError {
    fn from(e: Refused) -> Self {
        let (status, reason) = match &e {
            Refused::Store(_) => return ApiError::storage(e),
            Refused::Unauthorized => return ApiError::unauthorized(),
            Refused::ClientFull { wait, .. } => {
                return ApiError::rate_limited(&e.to_string(), *wait);
            }
            Refused::Malformed(_) => (StatusCode::BAD_REQUEST, "malformed"),
            Refused::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            Refused::AlreadyApproved => (StatusCode::CONFLICT, "already_approved"),
            Refused::Expired => (StatusCode::GONE, "expired"),
            Refused::Full(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
        };
        ApiError::new(status, reason, e.to_string())
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::storage(e)
    }
}

impl From<shapes::Malformed> for ApiError {
    fn from(e: shapes::Malformed) -> Self {
        ApiError::malformed(e.0)
    }
}
