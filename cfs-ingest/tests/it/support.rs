//! What cfs-ingest's tests share: the minilm-int model, loaded once.

/// The minilm-int model, loaded once (`scripts/fetch-model` puts it where this looks).
pub fn minilm() -> &'static cfs_ingest::MiniLmInt {
    static MODEL: std::sync::OnceLock<cfs_ingest::MiniLmInt> = std::sync::OnceLock::new();
    MODEL.get_or_init(|| {
        let model = cfs_ingest::MiniLmInt::open_default().unwrap_or_else(|e| {
            panic!("{e}\n(the README's test command runs scripts/fetch-model first)")
        });
        // The file whose hash checked has the length a new store's check asks for.
        cfs_ingest::MiniLmInt::check_default().expect("the model file's length");
        model
    })
}
