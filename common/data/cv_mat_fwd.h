// OpenCV's image type, declared only: the data headers name cv::Mat in their functions'
// signatures, and a file that includes them without touching an image (a lab's options, the
// training loop) does not parse OpenCV's core header (about a second per file). A file that
// makes or reads images includes <opencv2/core.hpp> itself.
#pragma once

namespace cv {
class Mat;
}  // namespace cv
