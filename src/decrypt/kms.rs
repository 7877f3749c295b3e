//! KMS envelope framing, read only far enough to report the plugin's key: nothing here
//! decrypts (that needs the KMS plugin).
//!
//! - v1 (`k8s.io/apiserver/pkg/storage/value/encrypt/envelope`): body = 2-byte big-endian
//!   length of the encrypted DEK + encrypted DEK + encrypted data.
//! - v2 (`.../envelope/kmsv2`): body = protobuf `EncryptedObject { bytes encryptedData = 1;
//!   string keyID = 2; bytes encryptedDEKSource = 3; map<string, bytes> annotations = 4;
//!   int32 encryptedDEKSourceType = 5 }`, read here with a minimal wire-format reader.

/// Checks the v1 framing: the DEK length fits in the body.
pub(super) fn check_v1(body: &[u8]) -> Result<(), String> {
    let Some((len, rest)) = body.split_first_chunk::<2>() else {
        return Err(format!(
            "body is {} bytes, shorter than the 2-byte DEK length",
            body.len()
        ));
    };
    let dek = usize::from(u16::from_be_bytes(*len));
    if dek == 0 {
        return Err("encrypted DEK length is 0".to_string());
    }
    if dek > rest.len() {
        return Err(format!(
            "encrypted DEK length {dek} exceeds the {} bytes that follow",
            rest.len()
        ));
    }
    Ok(())
}

/// The `keyID` (field 2) of a v2 `EncryptedObject`, `Ok(None)` when absent or empty. The last
/// occurrence wins, as in protobuf. Errors describe the first wire-format problem.
pub(super) fn v2_key_id(body: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut r = Reader { buf: body, pos: 0 };
    let mut key_id = None;
    while r.pos < body.len() {
        let at = r.pos;
        let tag = r
            .varint()
            .ok_or_else(|| format!("EncryptedObject: bad field tag at offset {at}"))?;
        let field = tag >> 3;
        let wire = tag & 7;
        if field == 0 {
            return Err(format!("EncryptedObject: field number 0 at offset {at}"));
        }
        let truncated = || format!("EncryptedObject: field {field} truncated at offset {at}");
        match wire {
            0 => {
                r.varint().ok_or_else(truncated)?;
            }
            1 => r.skip(8).ok_or_else(truncated)?,
            2 => {
                let len = r.varint().ok_or_else(truncated)?;
                let len = usize::try_from(len).map_err(|_| truncated())?;
                let bytes = r.take(len).ok_or_else(truncated)?;
                if field == 2 {
                    key_id = Some(bytes.to_vec());
                }
            }
            5 => r.skip(4).ok_or_else(truncated)?,
            other => {
                return Err(format!(
                "EncryptedObject: field {field} has unsupported wire type {other} at offset {at}"
            ))
            }
        }
    }
    Ok(key_id.filter(|id| !id.is_empty()))
}

/// A bounds-checked cursor over protobuf wire bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A base-128 varint of at most 10 bytes; `None` when cut short or too long.
    fn varint(&mut self) -> Option<u64> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let byte = *self.buf.get(self.pos)?;
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(len)?;
        let bytes = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(bytes)
    }

    fn skip(&mut self, len: usize) -> Option<()> {
        self.take(len).map(|_| ())
    }
}
