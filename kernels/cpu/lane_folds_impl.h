// The folds of kLanes float lanes into one double that every row loop's sums end with
// (row_kernels_impl.h, silu_rows_impl.h), so that GroupNorm's and the fused op's sums fold
// alike. Included inside each ISA build's namespace after its target is chosen; like those
// files it may include no header.

// The lanes' sum in double, by a fixed tree: 8 partial sums of every 8th lane, then
// halved three times. (A serial chain of 32 double adds cost more than the data of a
// small channel, e.g. 64 elements.) Exact conversions, so only the tree sets the bits.
constexpr int kFoldWidth = 8;
static_assert(kLanes % kFoldWidth == 0, "lanes fold in rows of 8");

inline double FoldLanes(const float *lanes) {
  double part[kFoldWidth];
  for (int k = 0; k < kFoldWidth; ++k) part[k] = lanes[k];
  for (int row = 1; row < kLanes / kFoldWidth; ++row) {
    for (int k = 0; k < kFoldWidth; ++k) part[k] += lanes[row * kFoldWidth + k];
  }
  for (int width = kFoldWidth / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) part[k] += part[k + width];
  }
  return part[0];
}

// The backward's per-channel sums fold their lanes more cheaply (a 64-element row is
// mostly fold otherwise): the four rows of 8 lanes are added in float as
// (row 0 + row 1) + (row 2 + row 3), and the 8 results in double by the halving tree
// above. A lane already holds a float sum of up to kBlock / kLanes elements, so the two
// extra float roundings do not change the accuracy that matters.
inline double FoldLanesViaFloat(const float *lanes) {
  float quad[kFoldWidth];
  for (int k = 0; k < kFoldWidth; ++k) {
    quad[k] = (lanes[k] + lanes[kFoldWidth + k]) + (lanes[2 * kFoldWidth + k] + lanes[3 * kFoldWidth + k]);
  }
  double part[kFoldWidth];
  for (int k = 0; k < kFoldWidth; ++k) part[k] = quad[k];
  for (int width = kFoldWidth / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) part[k] += part[k + width];
  }
  return part[0];
}
static_assert(kLanes == 4 * kFoldWidth, "FoldLanesViaFloat adds four rows of lanes");
