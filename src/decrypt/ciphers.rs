//! The block ciphers of encryption at rest (AES-CBC, AES-GCM, XSalsa20-Poly1305 secretbox),
//! each behind a check of the body's shape (IV or nonce, tag, whole blocks) so that nothing
//! here can panic. Bodies enter without the `k8s:enc:...:` prefix; plaintext leaves only on
//! success.

use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{AesGcm, Nonce};
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, KeyIvInit};
use crypto_secretbox::XSalsa20Poly1305;

const AES_BLOCK: usize = 16;
const GCM_NONCE: usize = 12;
const GCM_TAG: usize = 16;
const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_TAG: usize = 16;

/// aescbc body shape: IV + a positive whole number of blocks.
pub(super) fn check_cbc(body: &[u8]) -> Result<(), String> {
    if body.len() < AES_BLOCK {
        return Err(format!(
            "body is {} bytes, shorter than the 16-byte IV",
            body.len()
        ));
    }
    let ct = body.len() - AES_BLOCK;
    if ct == 0 || !ct.is_multiple_of(AES_BLOCK) {
        return Err(format!(
            "ciphertext is {ct} bytes, not a positive multiple of 16"
        ));
    }
    Ok(())
}

/// AES-CBC decrypt + PKCS#7 unpad; `None` on bad padding. `body` passed [`check_cbc`].
pub(super) fn cbc_open(key: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    let (iv, ct) = body.split_at_checked(AES_BLOCK)?;
    match key.len() {
        16 => cbc::Decryptor::<Aes128>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec_mut::<Pkcs7>(ct)
            .ok(),
        24 => cbc::Decryptor::<Aes192>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec_mut::<Pkcs7>(ct)
            .ok(),
        32 => cbc::Decryptor::<Aes256>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec_mut::<Pkcs7>(ct)
            .ok(),
        _ => None,
    }
}

/// aesgcm body shape: nonce + at least a tag.
pub(super) fn check_gcm(body: &[u8]) -> Result<(), String> {
    if body.len() < GCM_NONCE + GCM_TAG {
        return Err(format!(
            "body is {} bytes, shorter than the 12-byte nonce plus 16-byte tag",
            body.len()
        ));
    }
    Ok(())
}

/// An AES-GCM key of any of the three sizes.
pub(super) enum Gcm {
    A128(Box<AesGcm<Aes128, U12>>),
    A192(Box<AesGcm<Aes192, U12>>),
    A256(Box<AesGcm<Aes256, U12>>),
}

impl Gcm {
    pub(super) fn new(key: &[u8]) -> Option<Gcm> {
        Some(match key.len() {
            16 => Gcm::A128(Box::new(AesGcm::new_from_slice(key).ok()?)),
            24 => Gcm::A192(Box::new(AesGcm::new_from_slice(key).ok()?)),
            32 => Gcm::A256(Box::new(AesGcm::new_from_slice(key).ok()?)),
            _ => return None,
        })
    }

    /// Opens nonce + ciphertext||tag with `aad`; `None` when authentication fails.
    pub(super) fn open(&self, body: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        if body.len() < GCM_NONCE + GCM_TAG {
            return None;
        }
        let (nonce, msg) = body.split_at(GCM_NONCE);
        let nonce = Nonce::<U12>::from_slice(nonce);
        let payload = Payload { msg, aad };
        match self {
            Gcm::A128(c) => c.decrypt(nonce, payload).ok(),
            Gcm::A192(c) => c.decrypt(nonce, payload).ok(),
            Gcm::A256(c) => c.decrypt(nonce, payload).ok(),
        }
    }
}

/// secretbox body shape: nonce + at least a tag.
pub(super) fn check_secretbox(body: &[u8]) -> Result<(), String> {
    if body.len() < SECRETBOX_NONCE + SECRETBOX_TAG {
        return Err(format!(
            "body is {} bytes, shorter than the 24-byte nonce plus 16-byte tag",
            body.len()
        ));
    }
    Ok(())
}

/// Opens nonce + tag||ciphertext (NaCl `secretbox.Seal` output); `None` when the tag
/// check fails.
pub(super) fn secretbox_open(key: &[u8], body: &[u8]) -> Option<Vec<u8>> {
    if body.len() < SECRETBOX_NONCE + SECRETBOX_TAG {
        return None;
    }
    let cipher = XSalsa20Poly1305::new_from_slice(key).ok()?;
    let (nonce, msg) = body.split_at(SECRETBOX_NONCE);
    cipher
        .decrypt(crypto_secretbox::Nonce::from_slice(nonce), msg)
        .ok()
}
