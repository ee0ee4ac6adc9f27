use super::*;
use crate::{accounts, keys};
use play_model::model::account::NewApiKey;
use play_model::model::event::Actor;
use play_model::model::quota::QuotaLimits;
use play_model::scopes::ScopeSet;
use play_model::token::random_base62;

async fn key(store: &Store, expires_at: Option<Timestamp>) -> (i64, i64) {
    let (account, user) = accounts::create_account(store, &format!("a{}", random_base62(6))).await.unwrap();
    let new = NewApiKey {
        account_id: account.id,
        user_id: user.id,
        label: "cli".into(),
        client_id: random_base62(12),
        token_digest: random_base62(40),
        scopes: ScopeSet::all(),
        expires_at,
    };
    let key = keys::create(store, new, &QuotaLimits::default(), Actor::System).await.unwrap();
    (key.id, account.id)
}

#[tokio::test]
async fn a_link_signs_in_once_with_its_key_and_never_after_the_key() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let pepper = TokenPepper::new([7; 32]);
    let (key_id, account) = key(store, None).await;
    let (secret, expires_at) = create(store, &pepper, key_id, account).await.unwrap();
    assert!(expires_at > time::now() + LIFETIME - chrono::Duration::seconds(5));
    // Only the HMAC is kept.
    let kept: String = sqlx::query("SELECT secret_hash FROM sign_in_links")
        .fetch_one(&mut *store.conn().await.unwrap())
        .await
        .unwrap()
        .try_get(0)
        .unwrap();
    assert!(!kept.contains(&secret));

    assert_eq!(redeem(store, &TokenPepper::new([8; 32]), &secret).await.unwrap(), None, "another pepper");
    assert_eq!(redeem(store, &pepper, &secret).await.unwrap(), Some((key_id, account)));
    assert_eq!(redeem(store, &pepper, &secret).await.unwrap(), None, "used once");
    assert_eq!(redeem(store, &pepper, "short").await.unwrap(), None);

    // Gone with its key; refused once the key expired.
    let (secret, _) = create(store, &pepper, key_id, account).await.unwrap();
    keys::delete(store, account, key_id, Actor::System).await.unwrap();
    assert_eq!(redeem(store, &pepper, &secret).await.unwrap(), None, "the key is gone");
    let (expiring, account) = key(store, Some(time::now() + chrono::Duration::milliseconds(50))).await;
    let (secret, _) = create(store, &pepper, expiring, account).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(80)).await;
    assert_eq!(redeem(store, &pepper, &secret).await.unwrap(), None, "the key expired");
}
