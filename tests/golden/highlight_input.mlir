#map = affine_map<(d0) -> (d0)>
// a comment with <b>markup</b> & "quotes"
module @m attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<6x8xf32> {tf.aliasing_output = 0 : i32} loc("args[0]['<k>']"), %arg1: tensor<i32>) -> (tensor<6x8xf32> {jax.result_info = "result[\22x\22]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %arg1) : tensor<6x8xf32>, tensor<i32>
    cond {
      %c = stablehlo.constant dense<-3> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg_0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = "stablehlo.sort"(%iterArg) <{dimension = 1 : i64, is_stable = true}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %2 = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
        stablehlo.return %2 : tensor<i1>
      }) : (tensor<6x8xf32>) -> tensor<6x8xf32>
      %3 = stablehlo.custom_call @f(%1) {backend_config = "<script>alert(1)</script>", m = #map} : (tensor<6x8xf32>) -> tensor<6x8xf32>
      stablehlo.return %3, %iterArg_0 : tensor<6x8xf32>, tensor<i32>
    }
    %4 = call @helper(%0#0) : (tensor<6x8xf32>) -> tensor<6x8xf32>
    return %4 : tensor<6x8xf32>
  }
  func.func private @helper(%arg0: tensor<6x8xf32>) -> tensor<6x8xf32> {
    %5 = stablehlo.add %arg0, %arg0 {note = #stablehlo<comparison_direction GT>} : tensor<6x8xf32> loc(#loc3)
    return %5 : tensor<6x8xf32>
  }
}
#loc3 = loc("x.py":3:4)
