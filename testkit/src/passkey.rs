//! A phone for the receiver's page: webauthn-authenticator-rs's software
//! passkey, and what a phone's platform keeps beside it, answering the
//! page's registration and sign-in options as a browser's
//! `navigator.credentials` would (the JSON of `toJSON()`).
//!
//! The software passkey keeps no resident keys and answers only a request
//! that names its credential; here the phone plays the part a platform
//! authenticator plays in discoverable sign-in: it keeps the user handle
//! from the registration, names its own credential, and hands the user
//! handle back beside the (signed) assertion, as a browser does. Test-only:
//! nothing here ships.

use base64::Engine;
use serde_json::{Value, json};
use webauthn_authenticator_rs::WebauthnAuthenticator;
use webauthn_authenticator_rs::prelude::{
    CreationChallengeResponse, RequestChallengeResponse, Url,
};
use webauthn_authenticator_rs::softpasskey::SoftPasskey;

/// A phone with one passkey (made by `create`).
pub struct Phone {
    key: WebauthnAuthenticator<SoftPasskey>,
    origin: Url,
    credential: Vec<u8>,
    user: Vec<u8>,
}

impl Default for Phone {
    fn default() -> Self {
        Phone::new()
    }
}

impl Phone {
    /// A phone on `http://localhost:8080` (a receiver on localhost takes
    /// its page's origin on any port).
    pub fn new() -> Phone {
        Phone::at("http://localhost:8080")
    }

    /// A phone whose browser shows the page at `origin`.
    pub fn at(origin: &str) -> Phone {
        Phone {
            // `true`: it reports user verification (it has no PIN to ask).
            key: WebauthnAuthenticator::new(SoftPasskey::new(true)),
            origin: Url::parse(origin).expect("an origin"),
            credential: Vec::new(),
            user: Vec::new(),
        }
    }

    /// The passkey's credential id (empty before `create`).
    pub fn credential(&self) -> &[u8] {
        &self.credential
    }

    /// The user handle the registration gave it.
    pub fn user(&self) -> &[u8] {
        &self.user
    }

    /// `navigator.credentials.create({publicKey: options})`, as the page
    /// sends the answer (RegistrationResponseJSON).
    pub fn create(&mut self, options: &Value) -> Value {
        let mut ccr: CreationChallengeResponse =
            serde_json::from_value(json!({ "publicKey": options })).expect("creation options");
        // The soft passkey refuses to keep a resident key; its platform
        // (this struct) keeps what discovery needs instead.
        if let Some(sel) = ccr.public_key.authenticator_selection.as_mut() {
            sel.require_resident_key = false;
        }
        self.user = ccr.public_key.user.id.to_vec();
        let answer = self
            .key
            .do_registration(self.origin.clone(), ccr)
            .expect("the soft passkey registers");
        self.credential = answer.raw_id.to_vec();
        page_json(serde_json::to_value(&answer).expect("JSON"))
    }

    /// `navigator.credentials.get({publicKey: options})` with no
    /// `allowCredentials`: this phone's one passkey answers, user handle and
    /// all (AuthenticationResponseJSON).
    pub fn get(&mut self, options: &Value) -> Value {
        let mut options = options.clone();
        assert!(options.get("allowCredentials").is_none());
        let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&self.credential);
        options["allowCredentials"] = json!([{"type": "public-key", "id": id}]);
        let rcr: RequestChallengeResponse =
            serde_json::from_value(json!({ "publicKey": options })).expect("request options");
        let mut answer = self
            .key
            .do_authentication(self.origin.clone(), rcr)
            .expect("the soft passkey signs");
        answer.response.user_handle = Some(self.user.clone().into());
        page_json(serde_json::to_value(&answer).expect("JSON"))
    }
}

/// The member names a browser's `toJSON()` gives.
fn page_json(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        let ext = o.remove("extensions").unwrap_or(json!({}));
        o.insert("clientExtensionResults".into(), ext);
    }
    v
}
