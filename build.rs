//! Compiles proto/orderbook.proto with protox, a protobuf compiler in pure Rust, so a
//! build needs no `protoc` installed. The encoded descriptors are kept for gRPC server
//! reflection (`publish/grpc.rs`).

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/orderbook.proto");
    let descriptors = protox::compile(["proto/orderbook.proto"], ["proto"])?;
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("orderbook_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
