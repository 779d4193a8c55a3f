//! Compiles proto/orderbook.proto with protox, a protobuf compiler in pure Rust, so a
//! build needs no `protoc` installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/orderbook.proto");
    let descriptors = protox::compile(["proto/orderbook.proto"], ["proto"])?;
    tonic_prost_build::configure().compile_fds(descriptors)?;
    Ok(())
}
