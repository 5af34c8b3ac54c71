//! What a failed API call answers: a status that says whose failure it was (the
//! caller's mistake 4xx, the daemon's own 5xx, a receiver the caller named 502)
//! and a JSON body `{"error": "..."}` that says what failed, in words the UI
//! shows as they are.

use crate::installers::InstallersError;
use crate::pipeline::outbox::OutboxError;
use crate::sinks::SinkError;
use crate::state::file::FileError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is not one this API takes (a bad field, a bad value).
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    /// It would clash with what is there (a second sink to one receiver).
    #[error("{0}")]
    Conflict(String),
    #[error("the UI token is missing or wrong")]
    Unauthorized,
    #[error("this API answers on 127.0.0.1 only (wrong Host)")]
    WrongHost,
    /// A receiver the caller named did not answer as the binding says.
    #[error("{0}")]
    BadGateway(String),
    /// The daemon's own failure: a file or the outbox it cannot read or write.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::WrongHost => StatusCode::MISDIRECTED_REQUEST,
            ApiError::BadGateway(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if matches!(self, ApiError::Internal(_)) {
            tracing::warn!("the local API failed: {self}");
        }
        let body = super::shapes::reply(&super::shapes::ApiErrorBody {
            error: self.to_string(),
        });
        (self.status(), body).into_response()
    }
}

impl From<OutboxError> for ApiError {
    fn from(e: OutboxError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

impl From<FileError> for ApiError {
    fn from(e: FileError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

impl From<SinkError> for ApiError {
    fn from(e: SinkError) -> Self {
        let text = e.to_string();
        match e {
            SinkError::Target(_)
            | SinkError::WebhookSecret
            | SinkError::UnknownHarness(_)
            | SinkError::NoSecrets(_) => ApiError::BadRequest(text),
            SinkError::Exists { .. } => ApiError::Conflict(text),
            SinkError::NoSuch(_) => ApiError::NotFound(text),
            SinkError::Discovery { .. } => ApiError::BadGateway(text),
            SinkError::File(_) | SinkError::Outbox(_) => ApiError::Internal(text),
        }
    }
}

impl From<InstallersError> for ApiError {
    fn from(e: InstallersError) -> Self {
        let text = e.to_string();
        match e {
            InstallersError::Harness(adapters::UnknownHarness::Unknown { .. }) => {
                ApiError::NotFound(text)
            }
            InstallersError::Harness(adapters::UnknownHarness::NoInstaller(_)) => {
                ApiError::BadRequest(text)
            }
            _ => ApiError::Internal(text),
        }
    }
}
