import "./src/formats/gguf/sink.ts";
import "./src/quant/quantize_stream.ts";
import "./src/pipeline/gguf_layout.ts";
import "./src/formats/gguf/reader.ts";
import "./src/arch/registry.ts";
import "./src/cli/command.ts";
