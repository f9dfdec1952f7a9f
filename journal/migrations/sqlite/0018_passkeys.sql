-- Passkeys (policy step_up: passkey). An approver's credential, enrolled from
-- a one-time link printed on the machine (countersign approver passkey): its
-- id (base64url), its public key (the COSE_Key, base64) and the same key as
-- a SubjectPublicKeyInfo (base64), its COSE algorithm, the RP ID it was made
-- for, and the last signature counter seen, kept in the transaction that
-- records the vote its assertion gives, so that a replayed assertion is
-- refused on any replica. A credential removed (countersign approver passkey
-- -remove) approves nothing from then on, and its row stays, removed_at set,
-- so that every audit export carries the key its receipts verify with.
CREATE TABLE passkey_credentials (
	credential_id TEXT PRIMARY KEY,
	user_id       INTEGER NOT NULL,
	public_key    TEXT NOT NULL,
	spki          TEXT NOT NULL,
	alg           INTEGER NOT NULL,
	rp_id         TEXT NOT NULL,
	counter       INTEGER NOT NULL DEFAULT 0,
	backup        INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	last_used     INTEGER NOT NULL DEFAULT 0,
	removed_at    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX passkey_credentials_user ON passkey_credentials(user_id);

-- A one-time enrolment link: the SHA-256 of its token (the token itself is
-- printed once and never kept), whose enrolment it is, until when it works,
-- the registration begun from it (go-webauthn's session, JSON) and when it
-- was used: once, for one credential.
CREATE TABLE passkey_links (
	token_sha256 TEXT PRIMARY KEY,
	user_id      INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	session      TEXT NOT NULL DEFAULT '',
	used_at      INTEGER NOT NULL DEFAULT 0
);

-- The receipt of a vote given with a passkey: the assertion and what it
-- claims (audit.PasskeyReceipt, JSON; '' for none), also chained in the
-- audit trail as a record of kind receipt.
ALTER TABLE approval_votes ADD COLUMN receipt TEXT NOT NULL DEFAULT '';
