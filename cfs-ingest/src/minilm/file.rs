//! The minilm-int model file: a magic, a version and named little-endian integer
//! tensors (`docs/spec.md`, "minilm-int: the model file"). Decoding is strict: every
//! length is checked before it is trusted, a name appears once, and no byte may trail.

use std::collections::HashMap;

/// The first eight bytes of a model file.
pub const MAGIC: &[u8; 8] = b"CFSMINT\0";
/// The format version this code reads.
pub const VERSION: u32 = 1;

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// `i8`, code 1.
    I8,
    /// `i16`, code 2.
    I16,
    /// `i32`, code 3.
    I32,
    /// `i64`, code 4.
    I64,
    /// `u8`, code 5.
    U8,
    /// `u32`, code 6.
    U32,
}

impl DType {
    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => Self::I8,
            2 => Self::I16,
            3 => Self::I32,
            4 => Self::I64,
            5 => Self::U8,
            6 => Self::U32,
            _ => return None,
        })
    }

    fn size_bytes(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I16 => 2,
            Self::I32 | Self::U32 => 4,
            Self::I64 => 8,
        }
    }
}

/// One tensor: its type, shape and raw little-endian bytes.
#[derive(Debug)]
pub struct Tensor<'a> {
    /// Element type.
    pub dtype: DType,
    /// Dimensions, outermost first.
    pub dims: Vec<usize>,
    /// `product(dims) * size` bytes.
    pub bytes: &'a [u8],
}

/// The tensors of a model file, by name.
#[derive(Debug)]
pub struct ModelFile<'a> {
    tensors: HashMap<String, Tensor<'a>>,
}

/// A cursor over the file's bytes that never reads past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl<'a> ModelFile<'a> {
    /// Decodes a model file; the error says what is wrong and where.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, String> {
        let mut r = Reader { bytes, pos: 0 };
        if r.take(8)? != MAGIC {
            return Err("not a minilm-int model file (bad magic)".into());
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(format!(
                "model file version {version}, this cfs reads {VERSION}"
            ));
        }
        let n = r.u32()?;
        let mut tensors = HashMap::new();
        for _ in 0..n {
            let (name, tensor) = Self::tensor(&mut r)?;
            if tensors.insert(name.clone(), tensor).is_some() {
                return Err(format!("tensor {name} appears twice"));
            }
        }
        if r.pos != bytes.len() {
            return Err(format!("{} trailing bytes", bytes.len() - r.pos));
        }
        Ok(Self { tensors })
    }

    fn tensor(r: &mut Reader<'a>) -> Result<(String, Tensor<'a>), String> {
        let name_len = usize::from(r.u16()?);
        let name = std::str::from_utf8(r.take(name_len)?)
            .map_err(|_| format!("tensor name at byte {} is not UTF-8", r.pos))?
            .to_owned();
        let code = r.u8()?;
        let dtype = DType::from_code(code).ok_or_else(|| format!("{name}: dtype {code}"))?;
        let ndim = r.u8()?;
        let mut dims = Vec::with_capacity(usize::from(ndim));
        let mut count: usize = 1;
        for _ in 0..ndim {
            let d = r.u32()? as usize;
            count = count
                .checked_mul(d)
                .ok_or_else(|| format!("{name}: shape overflows"))?;
            dims.push(d);
        }
        let len = count
            .checked_mul(dtype.size_bytes())
            .ok_or_else(|| format!("{name}: size overflows"))?;
        let bytes = r.take(len).map_err(|e| format!("{name}: {e}"))?;
        Ok((name, Tensor { dtype, dims, bytes }))
    }

    /// The tensor `name`, whatever its type and shape.
    fn named(&self, name: &str) -> Result<&Tensor<'a>, String> {
        self.tensors
            .get(name)
            .ok_or_else(|| format!("tensor {name} is missing"))
    }

    /// The tensor `name` with type `dtype` and shape `dims`.
    pub fn get(&self, name: &str, dtype: DType, dims: &[usize]) -> Result<&Tensor<'a>, String> {
        let t = self.named(name)?;
        if t.dtype != dtype || t.dims != dims {
            return Err(format!(
                "tensor {name} is {:?} {:?}, expected {dtype:?} {dims:?}",
                t.dtype, t.dims
            ));
        }
        Ok(t)
    }

    /// The one-dimensional `u8` tensor `name`, of any length.
    pub fn bytes(&self, name: &str) -> Result<&'a [u8], String> {
        let t = self.named(name)?;
        if t.dtype != DType::U8 || t.dims.len() != 1 {
            return Err(format!(
                "tensor {name} is {:?} {:?}, expected U8 [n]",
                t.dtype, t.dims
            ));
        }
        Ok(t.bytes)
    }

    /// The values of tensor `name` (type `dtype`, shape `dims`), each decoded from its
    /// `N` little-endian bytes by `from_le`.
    fn values<const N: usize, T>(
        &self,
        name: &str,
        dtype: DType,
        dims: &[usize],
        from_le: impl Fn([u8; N]) -> T,
    ) -> Result<Vec<T>, String> {
        let t = self.get(name, dtype, dims)?;
        Ok(t.bytes
            .chunks_exact(N)
            .map(|b| from_le(b.try_into().expect("chunks_exact gives N bytes")))
            .collect())
    }

    /// `name` as `i8` values.
    pub fn i8s(&self, name: &str, dims: &[usize]) -> Result<Vec<i8>, String> {
        self.values(name, DType::I8, dims, i8::from_le_bytes)
    }

    /// `name` as `i16` values.
    pub fn i16s(&self, name: &str, dims: &[usize]) -> Result<Vec<i16>, String> {
        self.values(name, DType::I16, dims, i16::from_le_bytes)
    }

    /// `name` as `i32` values.
    pub fn i32s(&self, name: &str, dims: &[usize]) -> Result<Vec<i32>, String> {
        self.values(name, DType::I32, dims, i32::from_le_bytes)
    }

    /// `name` as `u32` values.
    pub fn u32s(&self, name: &str, dims: &[usize]) -> Result<Vec<u32>, String> {
        self.values(name, DType::U32, dims, u32::from_le_bytes)
    }

    /// `name` as `i64` values.
    pub fn i64s(&self, name: &str, dims: &[usize]) -> Result<Vec<i64>, String> {
        self.values(name, DType::I64, dims, i64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(tensors: &[(&str, u8, &[u32], &[u8])]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend(VERSION.to_le_bytes());
        out.extend((tensors.len() as u32).to_le_bytes());
        for (name, code, dims, data) in tensors {
            out.extend((name.len() as u16).to_le_bytes());
            out.extend(name.as_bytes());
            out.push(*code);
            out.push(dims.len() as u8);
            for d in *dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(*data);
        }
        out
    }

    #[test]
    fn reads_tensors_and_checks_shapes() {
        let bytes = file(&[("a", 2, &[2], &[1, 0, 0xff, 0xff]), ("b", 5, &[3], b"xyz")]);
        let f = ModelFile::parse(&bytes).expect("parse");
        assert_eq!(f.i16s("a", &[2]).expect("a"), [1, -1]);
        assert_eq!(f.bytes("b").expect("b"), b"xyz");
        assert!(f.i16s("a", &[3]).is_err());
        assert!(f.i32s("a", &[2]).is_err());
        assert!(f.i8s("c", &[1]).is_err());
    }

    #[test]
    fn refuses_damaged_files() {
        let good = file(&[("a", 2, &[2], &[1, 0, 0xff, 0xff])]);
        for cut in 0..good.len() {
            assert!(ModelFile::parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(ModelFile::parse(&trailing).is_err());
        let twice = file(&[("a", 5, &[1], b"x"), ("a", 5, &[1], b"y")]);
        assert!(ModelFile::parse(&twice).is_err());
        let bad_type = file(&[("a", 9, &[1], b"x")]);
        assert!(ModelFile::parse(&bad_type).is_err());
        let huge = file(&[("a", 4, &[u32::MAX, u32::MAX, u32::MAX], b"")]);
        assert!(ModelFile::parse(&huge).is_err());
        let mut magic = good;
        magic[0] = b'X';
        assert!(ModelFile::parse(&magic).is_err());
    }
}
