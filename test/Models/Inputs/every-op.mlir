// A two-layer model shaped like Kimi K3, written by hand in the k3 dialect:
// hidden 64, vocabulary 256, layer 0 = KDA + dense SiTU MLP, layer 1 = gated
// MLA (q-LoRA, NoPE) + routed LatentMoE with MXFP4 experts and shared
// experts, Attention Residuals sealing every layer (block size 1).
// Every op of the dialect appears at least once. Weight names follow the
// checkpoint, but the weights are typed by their use shapes (A_log [H],
// dt_bias [H, K], conv filters [P, W], AttnRes queries [D]) and the routed
// experts are one stacked tensor each: a hand-written sample, not importer
// output (lib/Import types weights by their storage shapes).
//
// Sizes: KDA 2 heads x 16 (P = 32), conv width 4; MLA 2 heads, nope 16,
// rope 8, latent 32, v 16, q rank 32; MoE 4 experts, top-2, latent 32,
// expert intermediate 64, shared intermediate 48; dense intermediate 96.

func.func @prefill(%ids: tensor<?xi32>,
                   %conv_q0: tensor<3x32xf32>, %conv_k0: tensor<3x32xf32>,
                   %conv_v0: tensor<3x32xf32>, %kda_s0: tensor<2x16x16xf32>,
                   %mla_c0: tensor<?x40xbf16>)
    -> (tensor<?x256xf32>, tensor<3x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>,
        tensor<2x16x16xf32>, tensor<?x40xbf16>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %ids, %c0 : tensor<?xi32>

  // Embedding; it is also the first sealed AttnRes block.
  %emb_w = k3.weight "language_model.model.embed_tokens.weight" : tensor<256x64xbf16>
  %emb = k3.embed %ids, %emb_w : (tensor<?xi32>, tensor<256x64xbf16>) -> tensor<?x64xf32>

  //===--------------------------------------------------------------------===//
  // Layer 0: KDA. Nothing is sealed yet, so attention reads the embedding.
  //===--------------------------------------------------------------------===//
  %ln0 = k3.weight "language_model.model.layers.0.input_layernorm.weight" : tensor<64xbf16>
  %x0 = k3.rms_norm %emb, %ln0 {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xbf16>) -> tensor<?x64xf32>
  %wq = k3.weight "language_model.model.layers.0.self_attn.q_proj.weight" : tensor<32x64xbf16>
  %wk = k3.weight "language_model.model.layers.0.self_attn.k_proj.weight" : tensor<32x64xbf16>
  %wv = k3.weight "language_model.model.layers.0.self_attn.v_proj.weight" : tensor<32x64xbf16>
  %cq = k3.weight "language_model.model.layers.0.self_attn.q_conv1d.weight" : tensor<32x4xf32>
  %ck = k3.weight "language_model.model.layers.0.self_attn.k_conv1d.weight" : tensor<32x4xf32>
  %cv = k3.weight "language_model.model.layers.0.self_attn.v_conv1d.weight" : tensor<32x4xf32>
  %q = k3.linear %x0, %wq : (tensor<?x64xf32>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %k = k3.linear %x0, %wk : (tensor<?x64xf32>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %v = k3.linear %x0, %wv : (tensor<?x64xf32>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %qc, %conv_q1 = k3.short_conv %q, %cq, state(%conv_q0) silu
      : (tensor<?x32xf32>, tensor<32x4xf32>, tensor<3x32xf32>) -> (tensor<?x32xf32>, tensor<3x32xf32>)
  %kc, %conv_k1 = k3.short_conv %k, %ck, state(%conv_k0) silu
      : (tensor<?x32xf32>, tensor<32x4xf32>, tensor<3x32xf32>) -> (tensor<?x32xf32>, tensor<3x32xf32>)
  %vc, %conv_v1 = k3.short_conv %v, %cv, state(%conv_v0) silu
      : (tensor<?x32xf32>, tensor<32x4xf32>, tensor<3x32xf32>) -> (tensor<?x32xf32>, tensor<3x32xf32>)
  %q3 = tensor.expand_shape %qc [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
  %k3 = tensor.expand_shape %kc [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
  %v3 = tensor.expand_shape %vc [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
  %qn = k3.l2_norm %q3 {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  %kn = k3.l2_norm %k3 {eps = 1.0e-06 : f32} : tensor<?x2x16xf32>
  // Low-rank decay projection, then the K3 lower-bounded gate.
  %fa = k3.weight "language_model.model.layers.0.self_attn.f_a_proj.weight" : tensor<16x64xbf16>
  %fb = k3.weight "language_model.model.layers.0.self_attn.f_b_proj.weight" : tensor<32x16xbf16>
  %alog = k3.weight "language_model.model.layers.0.self_attn.A_log" : tensor<2xf32>
  %dtb = k3.weight "language_model.model.layers.0.self_attn.dt_bias" : tensor<2x16xf32>
  %f1 = k3.linear %x0, %fa : (tensor<?x64xf32>, tensor<16x64xbf16>) -> tensor<?x16xf32>
  %f2 = k3.linear %f1, %fb : (tensor<?x16xf32>, tensor<32x16xbf16>) -> tensor<?x32xf32>
  %f3 = tensor.expand_shape %f2 [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
  %g = k3.kda_gate lower_bound lb = -5.0 %f3, %alog, %dtb
      : (tensor<?x2x16xf32>, tensor<2xf32>, tensor<2x16xf32>) -> tensor<?x2x16xf32>
  %wb = k3.weight "language_model.model.layers.0.self_attn.b_proj.weight" : tensor<2x64xbf16>
  %braw = k3.linear %x0, %wb : (tensor<?x64xf32>, tensor<2x64xbf16>) -> tensor<?x2xf32>
  %beta = k3.sigmoid %braw : tensor<?x2xf32>
  %o, %kda_s1 = k3.kda %qn, %kn, %v3, %g, %beta, state(%kda_s0) scale = 0.25
      : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x2xf32>,
         tensor<2x16x16xf32>) -> (tensor<?x2x16xf32>, tensor<2x16x16xf32>)
  // Head-wise RMSNorm with the full-rank sigmoid output gate, then o_proj.
  %wg = k3.weight "language_model.model.layers.0.self_attn.g_proj.weight" : tensor<32x64xbf16>
  %onw = k3.weight "language_model.model.layers.0.self_attn.o_norm.weight" : tensor<16xf32>
  %wo = k3.weight "language_model.model.layers.0.self_attn.o_proj.weight" : tensor<64x32xbf16>
  %gt = k3.linear %x0, %wg : (tensor<?x64xf32>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %gt3 = tensor.expand_shape %gt [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
  %on = k3.rms_norm %o, %onw gate(%gt3) {eps = 1.0e-05 : f32}
      : (tensor<?x2x16xf32>, tensor<16xf32>, tensor<?x2x16xf32>) -> tensor<?x2x16xf32>
  %o2 = tensor.collapse_shape %on [[0], [1, 2]] : tensor<?x2x16xf32> into tensor<?x32xf32>
  %a0 = k3.linear %o2, %wo : (tensor<?x32xf32>, tensor<64x32xbf16>) -> tensor<?x64xf32>

  // Layer 0 FFN: dense SiTU MLP reading [embedding, running].
  %mn0 = k3.weight "language_model.model.layers.0.mlp_res_norm.weight" : tensor<64xbf16>
  %mp0 = k3.weight "language_model.model.layers.0.mlp_res_proj.weight" : tensor<64xbf16>
  %h0 = k3.attn_res [%emb, %a0] norm(%mn0) query(%mp0) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
  %pln0 = k3.weight "language_model.model.layers.0.post_attention_layernorm.weight" : tensor<64xbf16>
  %y0 = k3.rms_norm %h0, %pln0 {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xbf16>) -> tensor<?x64xf32>
  %dg = k3.weight "language_model.model.layers.0.mlp.gate_proj.weight" : tensor<96x64xbf16>
  %du = k3.weight "language_model.model.layers.0.mlp.up_proj.weight" : tensor<96x64xbf16>
  %dd = k3.weight "language_model.model.layers.0.mlp.down_proj.weight" : tensor<64x96xbf16>
  %m0 = k3.mlp %y0, %dg, %du, %dd {beta1 = 4.0 : f32, beta2 = 25.0 : f32}
      : (tensor<?x64xf32>, tensor<96x64xbf16>, tensor<96x64xbf16>, tensor<64x96xbf16>) -> tensor<?x64xf32>
  %r0 = arith.addf %a0, %m0 : tensor<?x64xf32>

  //===--------------------------------------------------------------------===//
  // Layer 1: MLA. Reads [embedding, running], then seals the running sum.
  //===--------------------------------------------------------------------===//
  %an1 = k3.weight "language_model.model.layers.1.self_attention_res_norm.weight" : tensor<64xbf16>
  %ap1 = k3.weight "language_model.model.layers.1.self_attention_res_proj.weight" : tensor<64xbf16>
  %h1 = k3.attn_res [%emb, %r0] norm(%an1) query(%ap1) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
  %ln1 = k3.weight "language_model.model.layers.1.input_layernorm.weight" : tensor<64xbf16>
  %x1 = k3.rms_norm %h1, %ln1 {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xbf16>) -> tensor<?x64xf32>
  %qa = k3.weight "language_model.model.layers.1.self_attn.q_a_proj.weight" : tensor<32x64xbf16>
  %qaln = k3.weight "language_model.model.layers.1.self_attn.q_a_layernorm.weight" : tensor<32xbf16>
  %qb = k3.weight "language_model.model.layers.1.self_attn.q_b_proj.weight" : tensor<48x32xbf16>
  %q1a = k3.linear %x1, %qa : (tensor<?x64xf32>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %q1n = k3.rms_norm %q1a, %qaln {eps = 1.0e-06 : f32} : (tensor<?x32xf32>, tensor<32xbf16>) -> tensor<?x32xf32>
  %q1b = k3.linear %q1n, %qb : (tensor<?x32xf32>, tensor<48x32xbf16>) -> tensor<?x48xf32>
  %q1 = tensor.expand_shape %q1b [[0], [1, 2]] output_shape [%t, 2, 24] : tensor<?x48xf32> into tensor<?x2x24xf32>
  %kva = k3.weight "language_model.model.layers.1.self_attn.kv_a_proj_with_mqa.weight" : tensor<40x64xbf16>
  %kvaln = k3.weight "language_model.model.layers.1.self_attn.kv_a_layernorm.weight" : tensor<32xbf16>
  %kvb = k3.weight "language_model.model.layers.1.self_attn.kv_b_proj.weight" : tensor<64x32xbf16>
  %ckr = k3.linear %x1, %kva : (tensor<?x64xf32>, tensor<40x64xbf16>) -> tensor<?x40xf32>
  %craw = tensor.extract_slice %ckr[0, 0] [%t, 32] [1, 1] : tensor<?x40xf32> to tensor<?x32xf32>
  %kr = tensor.extract_slice %ckr[0, 32] [%t, 8] [1, 1] : tensor<?x40xf32> to tensor<?x8xf32>
  %lat = k3.rms_norm %craw, %kvaln {eps = 1.0e-06 : f32} : (tensor<?x32xf32>, tensor<32xbf16>) -> tensor<?x32xf32>
  %mg = k3.weight "language_model.model.layers.1.self_attn.g_proj.weight" : tensor<32x64xbf16>
  %mgt = k3.linear %x1, %mg : (tensor<?x64xf32>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  %mgt3 = tensor.expand_shape %mgt [[0], [1, 2]] output_shape [%t, 2, 16] : tensor<?x32xf32> into tensor<?x2x16xf32>
  // scale = 1/sqrt(nope + rope) = 1/sqrt(24), not 1/sqrt(latent + rope).
  %mo, %mla_c1 = k3.mla %q1, %lat, %kr, kv_b(%kvb), cache(%mla_c0) gate(%mgt3) scale = 0.204124153 causal
      : (tensor<?x2x24xf32>, tensor<?x32xf32>, tensor<?x8xf32>, tensor<64x32xbf16>, tensor<?x40xbf16>,
         tensor<?x2x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x40xbf16>)
  %mo2 = tensor.collapse_shape %mo [[0], [1, 2]] : tensor<?x2x16xf32> into tensor<?x32xf32>
  %mwo = k3.weight "language_model.model.layers.1.self_attn.o_proj.weight" : tensor<64x32xbf16>
  %a1 = k3.linear %mo2, %mwo : (tensor<?x32xf32>, tensor<64x32xbf16>) -> tensor<?x64xf32>

  // Layer 1 FFN: routed LatentMoE reading [embedding, block 1, running].
  %mn1 = k3.weight "language_model.model.layers.1.mlp_res_norm.weight" : tensor<64xbf16>
  %mp1 = k3.weight "language_model.model.layers.1.mlp_res_proj.weight" : tensor<64xbf16>
  %h1m = k3.attn_res [%emb, %r0, %a1] norm(%mn1) query(%mp1) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
  %pln1 = k3.weight "language_model.model.layers.1.post_attention_layernorm.weight" : tensor<64xbf16>
  %y1 = k3.rms_norm %h1m, %pln1 {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xbf16>) -> tensor<?x64xf32>
  %rw = k3.weight "language_model.model.layers.1.block_sparse_moe.gate.weight" : tensor<4x64xbf16>
  %rb = k3.weight "language_model.model.layers.1.block_sparse_moe.gate.e_score_correction_bias" : tensor<4xf32>
  %sel, %sw = k3.router %y1, %rw bias(%rb) top_k = 2 renormalize scaling = 1.0
      : (tensor<?x64xf32>, tensor<4x64xbf16>, tensor<4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %ld = k3.weight "language_model.model.layers.1.block_sparse_moe.routed_expert_down_proj.weight" : tensor<32x64xbf16>
  %lu = k3.weight "language_model.model.layers.1.block_sparse_moe.routed_expert_up_proj.weight" : tensor<64x32xbf16>
  %ln = k3.weight "language_model.model.layers.1.block_sparse_moe.routed_expert_norm.weight" : tensor<32xbf16>
  %w1 = k3.weight "language_model.model.layers.1.block_sparse_moe.experts.{e}.w1.weight_packed" : tensor<4x64x32xf4E2M1FN>
  %w3 = k3.weight "language_model.model.layers.1.block_sparse_moe.experts.{e}.w3.weight_packed" : tensor<4x64x32xf4E2M1FN>
  %w2 = k3.weight "language_model.model.layers.1.block_sparse_moe.experts.{e}.w2.weight_packed" : tensor<4x32x64xf4E2M1FN>
  %s1 = k3.weight "language_model.model.layers.1.block_sparse_moe.experts.{e}.w1.weight_scale" : tensor<4x64x1xf8E8M0FNU>
  %s3 = k3.weight "language_model.model.layers.1.block_sparse_moe.experts.{e}.w3.weight_scale" : tensor<4x64x1xf8E8M0FNU>
  %s2 = k3.weight "language_model.model.layers.1.block_sparse_moe.experts.{e}.w2.weight_scale" : tensor<4x32x2xf8E8M0FNU>
  %m1r = k3.moe %y1 routed(%sel, %sw) latent(%ld, %lu) norm(%ln) experts(%w1, %w3, %w2) scales(%s1, %s3, %s2)
      {beta1 = 4.0 : f32, beta2 = 25.0 : f32, eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<32x64xbf16>, tensor<64x32xbf16>, tensor<32xbf16>,
         tensor<4x64x32xf4E2M1FN>, tensor<4x64x32xf4E2M1FN>, tensor<4x32x64xf4E2M1FN>, tensor<4x64x1xf8E8M0FNU>,
         tensor<4x64x1xf8E8M0FNU>, tensor<4x32x2xf8E8M0FNU>) -> tensor<?x64xf32>
  // The shared experts written out as the form k3-decompose-mlp produces
  // (k3.moe could also take them as shared(...)).
  %sg = k3.weight "language_model.model.layers.1.block_sparse_moe.shared_experts.gate_proj.weight" : tensor<48x64xbf16>
  %su = k3.weight "language_model.model.layers.1.block_sparse_moe.shared_experts.up_proj.weight" : tensor<48x64xbf16>
  %sd = k3.weight "language_model.model.layers.1.block_sparse_moe.shared_experts.down_proj.weight" : tensor<64x48xbf16>
  %shg = k3.linear %y1, %sg : (tensor<?x64xf32>, tensor<48x64xbf16>) -> tensor<?x48xf32>
  %shu = k3.linear %y1, %su : (tensor<?x64xf32>, tensor<48x64xbf16>) -> tensor<?x48xf32>
  %shh = k3.situ_glu %shg, %shu {beta1 = 4.0 : f32, beta2 = 25.0 : f32} : tensor<?x48xf32>
  %sh = k3.linear %shh, %sd : (tensor<?x48xf32>, tensor<64x48xbf16>) -> tensor<?x64xf32>
  %m1 = arith.addf %m1r, %sh : tensor<?x64xf32>
  %r1 = arith.addf %a1, %m1 : tensor<?x64xf32>

  //===--------------------------------------------------------------------===//
  // Output read over every block, final norm, LM head.
  //===--------------------------------------------------------------------===//
  %on_w = k3.weight "language_model.model.output_attn_res_norm.weight" : tensor<64xbf16>
  %op_w = k3.weight "language_model.model.output_attn_res_proj.weight" : tensor<64xbf16>
  %hf = k3.attn_res [%emb, %r0, %r1] norm(%on_w) query(%op_w) {eps = 1.0e-05 : f32}
      : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<64xbf16>, tensor<64xbf16>) -> tensor<?x64xf32>
  %fn = k3.weight "language_model.model.norm.weight" : tensor<64xbf16>
  %hn = k3.rms_norm %hf, %fn {eps = 1.0e-05 : f32} : (tensor<?x64xf32>, tensor<64xbf16>) -> tensor<?x64xf32>
  %head = k3.weight "language_model.lm_head.weight" : tensor<256x64xbf16>
  %logits = k3.lm_head %hn, %head : (tensor<?x64xf32>, tensor<256x64xbf16>) -> tensor<?x256xf32>
  return %logits, %conv_q1, %conv_k1, %conv_v1, %kda_s1, %mla_c1
      : tensor<?x256xf32>, tensor<3x32xf32>, tensor<3x32xf32>, tensor<3x32xf32>, tensor<2x16x16xf32>, tensor<?x40xbf16>
}
