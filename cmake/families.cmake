# The family files built into the library (families/*.yaml), as one
# generated source: paradnn_embed_families(OUT) writes OUT from
# generators/families.cpp.in, in the order FC, CNN, RNN, DLRM and the CNNs
# ONNX files bring: VGG, MOBILENET_V2, EFFICIENTNET, CONVNEXT, INCEPTION.
function(paradnn_embed_families root out)
  set(entries "")
  foreach(name fc cnn rnn dlrm vgg mobilenet_v2 efficientnet convnext
               inception)
    set(file ${root}/families/${name}.yaml)
    file(READ ${file} text)
    string(APPEND entries
           "      {\"families/${name}.yaml\", R\"paradnn_yaml(${text})paradnn_yaml\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  endforeach()
  set(PARADNN_FAMILY_FILES "${entries}")
  configure_file(${root}/generators/families.cpp.in ${out} @ONLY)
endfunction()
