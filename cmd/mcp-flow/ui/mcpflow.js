// node_modules/cbor-x/decode.js
var decoder;
try {
  decoder = new TextDecoder();
} catch (error) {
}
var src;
var srcEnd;
var position = 0;
var EMPTY_ARRAY = [];
var LEGACY_RECORD_INLINE_ID = 105;
var RECORD_DEFINITIONS_ID = 57342;
var RECORD_INLINE_ID = 57343;
var BUNDLED_STRINGS_ID = 57337;
var PACKED_REFERENCE_TAG_ID = 6;
var maxArraySize = 11281e4;
var maxMapSize = 1681e4;
var maxObjectSize = 1671e4;
var objectSizeLimit = maxObjectSize;
var strings = EMPTY_ARRAY;
var stringPosition = 0;
var currentDecoder = {};
var currentStructures;
var srcString;
var srcStringStart = 0;
var srcStringEnd = 0;
var bundledStrings;
var referenceMap;
var currentExtensions = [];
var currentExtensionRanges = [];
var packedValues;
var dataView;
var restoreMapsAsObject;
var defaultOptions = {
  useRecords: false,
  mapsAsObjects: true
};
var sequentialMode = false;
var inlineObjectReadThreshold = 2;
try {
  new Function("");
} catch (error) {
  inlineObjectReadThreshold = Infinity;
}
var Decoder = class _Decoder {
  constructor(options) {
    if (options) {
      if ((options.keyMap || options._keyMap) && !options.useRecords) {
        options.useRecords = false;
        options.mapsAsObjects = true;
      }
      if (options.useRecords === false && options.mapsAsObjects === void 0)
        options.mapsAsObjects = true;
      if (options.getStructures)
        options.getShared = options.getStructures;
      if (options.getShared && !options.structures)
        (options.structures = []).uninitialized = true;
      if (options.keyMap) {
        this.mapKey = /* @__PURE__ */ new Map();
        for (let [k, v] of Object.entries(options.keyMap)) this.mapKey.set(v, k);
      }
    }
    Object.assign(this, options);
  }
  /*
  decodeKey(key) {
  	return this.keyMap
  		? Object.keys(this.keyMap)[Object.values(this.keyMap).indexOf(key)] || key
  		: key
  }
  */
  decodeKey(key) {
    return this.keyMap ? this.mapKey.get(key) || key : key;
  }
  encodeKey(key) {
    return this.keyMap && this.keyMap.hasOwnProperty(key) ? this.keyMap[key] : key;
  }
  encodeKeys(rec) {
    if (!this._keyMap) return rec;
    let map = /* @__PURE__ */ new Map();
    for (let [k, v] of Object.entries(rec)) map.set(this._keyMap.hasOwnProperty(k) ? this._keyMap[k] : k, v);
    return map;
  }
  decodeKeys(map) {
    if (!this._keyMap || map.constructor.name != "Map") return map;
    if (!this._mapKey) {
      this._mapKey = /* @__PURE__ */ new Map();
      for (let [k, v] of Object.entries(this._keyMap)) this._mapKey.set(v, k);
    }
    let res = {};
    map.forEach((v, k) => res[safeKey(this._mapKey.has(k) ? this._mapKey.get(k) : k)] = v);
    return res;
  }
  mapDecode(source, end) {
    let res = this.decode(source);
    if (this._keyMap) {
      switch (res.constructor.name) {
        case "Array":
          return res.map((r) => this.decodeKeys(r));
      }
    }
    return res;
  }
  decode(source, end) {
    if (src) {
      return saveState(() => {
        clearSource();
        return this ? this.decode(source, end) : _Decoder.prototype.decode.call(defaultOptions, source, end);
      });
    }
    srcEnd = end > -1 && end < source.length ? end : source.length;
    position = 0;
    stringPosition = 0;
    srcStringEnd = 0;
    srcString = null;
    strings = EMPTY_ARRAY;
    bundledStrings = null;
    src = source;
    try {
      dataView = source.dataView || (source.dataView = new DataView(source.buffer, source.byteOffset, source.byteLength));
    } catch (error) {
      src = null;
      if (source instanceof Uint8Array)
        throw error;
      throw new Error("Source must be a Uint8Array or Buffer but was a " + (source && typeof source == "object" ? source.constructor.name : typeof source));
    }
    if (this instanceof _Decoder) {
      currentDecoder = this;
      packedValues = this.sharedValues && (this.pack ? new Array(this.maxPrivatePackedValues || 16).concat(this.sharedValues) : this.sharedValues);
      if (this.structures) {
        currentStructures = this.structures;
        return checkedRead();
      } else if (!currentStructures || currentStructures.length > 0) {
        currentStructures = [];
      }
    } else {
      currentDecoder = defaultOptions;
      if (!currentStructures || currentStructures.length > 0)
        currentStructures = [];
      packedValues = null;
    }
    return checkedRead();
  }
  decodeMultiple(source, forEach) {
    if (src) {
      return saveState(() => {
        clearSource();
        return this ? this.decodeMultiple(source, forEach) : defaultDecoder.decodeMultiple(source, forEach);
      });
    }
    let values, lastPosition = 0;
    try {
      let size = source.length;
      sequentialMode = true;
      let value = this ? this.decode(source, size) : defaultDecoder.decode(source, size);
      if (forEach) {
        let end = position;
        if (forEach(value) === false) {
          return;
        }
        while (end < size) {
          lastPosition = end;
          value = checkedRead();
          end = position;
          if (forEach(value) === false) {
            return;
          }
        }
      } else {
        values = [value];
        while (position < size) {
          lastPosition = position;
          values.push(checkedRead());
        }
        return values;
      }
    } catch (error) {
      if (error && (typeof error == "object" || typeof error == "function")) {
        error.lastPosition = lastPosition;
        error.values = values;
      }
      throw error;
    } finally {
      sequentialMode = false;
      clearSource();
    }
  }
};
var nestedDecodeErrors = /* @__PURE__ */ new WeakSet();
var arrayAllocationBudget;
function checkedRead() {
  try {
    arrayAllocationBudget = srcEnd - position;
    let result = read();
    if (bundledStrings) {
      if (position >= bundledStrings.postBundlePosition)
        throw new Error("Unexpected bundle position");
      position = bundledStrings.postBundlePosition;
      bundledStrings = null;
    }
    if (position == srcEnd) {
      currentStructures = null;
      src = null;
      if (referenceMap)
        referenceMap = null;
    } else if (position > srcEnd) {
      let error = new Error("Unexpected end of CBOR data");
      error.incomplete = true;
      throw error;
    } else if (!sequentialMode) {
      throw new Error("Data read, but end of buffer not reached");
    }
    return result;
  } catch (error) {
    clearSource();
    if (nestedDecodeErrors.has(error)) {
      if (error.incomplete)
        error.incomplete = false;
    } else if (error instanceof RangeError && position + 8 > srcEnd || error && typeof error.message == "string" && error.message.startsWith("Unexpected end of buffer")) {
      error.incomplete = true;
    }
    throw error;
  }
}
function readBreak() {
  if (position < srcEnd && src[position] === 255) {
    position++;
    return true;
  }
  return false;
}
function endOfCBORError(neededEnd) {
  let error = new Error("Unexpected end of CBOR data");
  error.incomplete = true;
  if (neededEnd)
    error.neededEnd = neededEnd;
  return error;
}
function read() {
  if (!(position < srcEnd)) throw endOfCBORError();
  let token = src[position++];
  let majorType = token >> 5;
  token = token & 31;
  if (token > 23) {
    switch (token) {
      case 24:
        if (position >= srcEnd) throw endOfCBORError();
        token = src[position++];
        break;
      case 25:
        if (majorType == 7) {
          return getFloat16();
        }
        token = dataView.getUint16(position);
        position += 2;
        break;
      case 26:
        if (majorType == 7) {
          let value = dataView.getFloat32(position);
          if (currentDecoder.useFloat32 > 2) {
            let multiplier = mult10[(src[position] & 127) << 1 | src[position + 1] >> 7];
            position += 4;
            return (multiplier * value + (value > 0 ? 0.5 : -0.5) >> 0) / multiplier;
          }
          position += 4;
          return value;
        }
        token = dataView.getUint32(position);
        position += 4;
        if (majorType === 1) return -1 - token;
        break;
      case 27:
        if (majorType == 7) {
          let value = dataView.getFloat64(position);
          position += 8;
          return value;
        }
        if (majorType > 1) {
          if (dataView.getUint32(position) > 0)
            throw new Error("JavaScript does not support arrays, maps, or strings with length over 4294967295");
          token = dataView.getUint32(position + 4);
        } else if (currentDecoder.int64AsNumber) {
          token = dataView.getUint32(position) * 4294967296;
          token += dataView.getUint32(position + 4);
          position += 8;
          if (majorType === 1) return -1 - token;
          break;
        } else token = dataView.getBigUint64(position);
        position += 8;
        break;
      case 31:
        switch (majorType) {
          case 2:
          // byte string
          case 3:
            throw new Error("Indefinite length not supported for byte or text strings");
          case 4:
            let array = [];
            let i = 0;
            while (!readBreak()) {
              if (i >= maxArraySize) throw new Error(`Array length exceeds ${maxArraySize}`);
              array[i++] = read();
            }
            return majorType == 4 ? array : majorType == 3 ? array.join("") : Buffer.concat(array);
          case 5:
            let key;
            if (currentDecoder.mapsAsObjects) {
              let object = {};
              let i2 = 0;
              if (currentDecoder.keyMap) {
                while (!readBreak()) {
                  key = read();
                  if (i2++ >= objectSizeLimit) throw new Error(`Property count exceeds ${objectSizeLimit}`);
                  object[safeKey(currentDecoder.decodeKey(key))] = read();
                }
              } else {
                while (!readBreak()) {
                  key = read();
                  if (i2++ >= objectSizeLimit) throw new Error(`Property count exceeds ${objectSizeLimit}`);
                  object[safeKey(key)] = read();
                }
              }
              return object;
            } else {
              if (restoreMapsAsObject) {
                currentDecoder.mapsAsObjects = true;
                restoreMapsAsObject = false;
              }
              let map = /* @__PURE__ */ new Map();
              if (currentDecoder.keyMap) {
                let i2 = 0;
                while (!readBreak()) {
                  key = read();
                  if (i2++ >= maxMapSize) {
                    throw new Error(`Map size exceeds ${maxMapSize}`);
                  }
                  map.set(currentDecoder.decodeKey(key), read());
                }
              } else {
                let i2 = 0;
                while (!readBreak()) {
                  key = read();
                  if (i2++ >= maxMapSize) {
                    throw new Error(`Map size exceeds ${maxMapSize}`);
                  }
                  map.set(key, read());
                }
              }
              return map;
            }
          case 7:
            throw new Error("Unexpected break stop code outside of an indefinite-length item");
          default:
            throw new Error("Invalid major type for indefinite length " + majorType);
        }
      default:
        throw new Error("Unknown token " + token);
    }
  }
  switch (majorType) {
    case 0:
      return token;
    case 1:
      return ~token;
    case 2:
      if (token > srcEnd - position) throw endOfCBORError(position + token);
      return readBin(token);
    case 3:
      if (srcStringEnd >= position) {
        return srcString.slice(position - srcStringStart, (position += token) - srcStringStart);
      }
      if (token > srcEnd - position) throw endOfCBORError(position + token);
      if (srcStringEnd == 0 && srcEnd < 140 && token < 32) {
        let string = token < 16 ? shortStringInJS(token) : longStringInJS(token);
        if (string != null)
          return string;
      }
      return readFixedString(token);
    case 4:
      if (token > maxArraySize) throw new Error(`Array length exceeds ${maxArraySize}`);
      if (token > srcEnd - position || (arrayAllocationBudget -= token) < 0) throw endOfCBORError(position + token);
      let array = new Array(token);
      for (let i = 0; i < token; i++) array[i] = read();
      return array;
    case 5:
      if (currentDecoder.mapsAsObjects) {
        if (token > objectSizeLimit) throw new Error(`Property count exceeds ${objectSizeLimit}`);
        if (token > (srcEnd - position) / 2) throw endOfCBORError(position + 2 * token);
        let object = {};
        if (currentDecoder.keyMap) for (let i = 0; i < token; i++) object[safeKey(currentDecoder.decodeKey(read()))] = read();
        else for (let i = 0; i < token; i++) object[safeKey(read())] = read();
        return object;
      } else {
        if (restoreMapsAsObject) {
          currentDecoder.mapsAsObjects = true;
          restoreMapsAsObject = false;
        }
        if (token > maxMapSize) throw new Error(`Map size exceeds ${maxMapSize}`);
        if (token > (srcEnd - position) / 2) throw endOfCBORError(position + 2 * token);
        let map = /* @__PURE__ */ new Map();
        if (currentDecoder.keyMap) for (let i = 0; i < token; i++) map.set(currentDecoder.decodeKey(read()), read());
        else for (let i = 0; i < token; i++) map.set(read(), read());
        return map;
      }
    case 6:
      if (token >= BUNDLED_STRINGS_ID) {
        let structure = currentStructures[token & 8191];
        if (structure) {
          if (!structure.read) structure.read = createStructureReader(structure);
          return structure.read();
        }
        if (token < 65536) {
          if (token == RECORD_INLINE_ID) {
            let length = readJustLength();
            let id = read();
            let structure2 = read();
            recordDefinition(id, structure2);
            let object = {};
            if (currentDecoder.keyMap) for (let i = 2; i < length; i++) {
              let key = currentDecoder.decodeKey(structure2[i - 2]);
              object[safeKey(key)] = read();
            }
            else for (let i = 2; i < length; i++) {
              let key = structure2[i - 2];
              object[safeKey(key)] = read();
            }
            return object;
          } else if (token == RECORD_DEFINITIONS_ID) {
            let length = readJustLength();
            let id = read();
            for (let i = 2; i < length; i++) {
              recordDefinition(id++, read());
            }
            return read();
          } else if (token == BUNDLED_STRINGS_ID) {
            return readBundleExt();
          }
          if (currentDecoder.getShared) {
            loadShared();
            structure = currentStructures[token & 8191];
            if (structure) {
              if (!structure.read)
                structure.read = createStructureReader(structure);
              return structure.read();
            }
          }
        }
      }
      let extension = currentExtensions[token];
      if (extension) {
        if (extension.handlesRead)
          return extension(read);
        else
          return extension(read());
      } else {
        let input = read();
        for (let i = 0; i < currentExtensionRanges.length; i++) {
          let value = currentExtensionRanges[i](token, input);
          if (value !== void 0)
            return value;
        }
        return new Tag(input, token);
      }
    case 7:
      switch (token) {
        case 20:
          return false;
        case 21:
          return true;
        case 22:
          return null;
        case 23:
          return;
        // undefined
        case 31:
        default:
          let packedValue = (packedValues || getPackedValues())[token];
          if (packedValue !== void 0)
            return packedValue;
          throw new Error("Unknown token " + token);
      }
    default:
      if (isNaN(token)) throw endOfCBORError();
      throw new Error("Unknown CBOR token " + token);
  }
}
var validName = /^[a-zA-Z_$][a-zA-Z\d_$]*$/;
function createStructureReader(structure) {
  if (!structure) throw new Error("Structure is required in record definition");
  function readObject() {
    let length = src[position++];
    length = length & 31;
    if (length > 23) {
      switch (length) {
        case 24:
          length = src[position++];
          break;
        case 25:
          length = dataView.getUint16(position);
          position += 2;
          break;
        case 26:
          length = dataView.getUint32(position);
          position += 4;
          break;
        default:
          throw new Error("Expected array header, but got " + src[position - 1]);
      }
    }
    let compiledReader = this.compiledReader;
    while (compiledReader) {
      if (compiledReader.propertyCount === length)
        return compiledReader(read);
      compiledReader = compiledReader.next;
    }
    if (this.slowReads++ >= inlineObjectReadThreshold) {
      let array = this.length == length ? this : this.slice(0, length);
      compiledReader = currentDecoder.keyMap ? new Function("r", "return {" + array.map((k) => currentDecoder.decodeKey(k)).map((k) => validName.test(k) ? safeKey(k) + ":r()" : "[" + JSON.stringify(k) + "]:r()").join(",") + "}") : new Function("r", "return {" + array.map((key) => validName.test(key) ? safeKey(key) + ":r()" : "[" + JSON.stringify(key) + "]:r()").join(",") + "}");
      if (this.compiledReader)
        compiledReader.next = this.compiledReader;
      compiledReader.propertyCount = length;
      this.compiledReader = compiledReader;
      return compiledReader(read);
    }
    let object = {};
    if (currentDecoder.keyMap) for (let i = 0; i < length; i++) object[safeKey(currentDecoder.decodeKey(this[i]))] = read();
    else for (let i = 0; i < length; i++) {
      object[safeKey(this[i])] = read();
    }
    return object;
  }
  structure.slowReads = 0;
  return readObject;
}
function safeKey(key) {
  if (typeof key === "string") return key === "__proto__" ? "__proto_" : key;
  if (typeof key === "number" || typeof key === "boolean" || typeof key === "bigint") return key.toString();
  if (key == null) return key + "";
  throw new Error("Invalid property name type " + typeof key);
}
var readFixedString = readStringJS;
function readStringJS(length) {
  let result;
  if (length < 16) {
    if (result = shortStringInJS(length))
      return result;
  }
  if (length > 64 && decoder)
    return decoder.decode(src.subarray(position, position += length));
  const end = position + length;
  const units = [];
  result = "";
  while (position < end) {
    const byte1 = src[position++];
    if ((byte1 & 128) === 0) {
      units.push(byte1);
    } else if ((byte1 & 224) === 192) {
      if (byte1 < 194 || position >= end || (src[position] & 192) !== 128) {
        units.push(65533);
      } else {
        const byte2 = src[position++] & 63;
        units.push((byte1 & 31) << 6 | byte2);
      }
    } else if ((byte1 & 240) === 224) {
      const byte2 = position < end ? src[position] : 0;
      if (position >= end || (byte2 & 192) !== 128 || byte1 === 224 && byte2 < 160 || byte1 === 237 && byte2 >= 160) {
        units.push(65533);
      } else {
        position++;
        if (position >= end || (src[position] & 192) !== 128) {
          units.push(65533);
        } else {
          const byte3 = src[position++] & 63;
          units.push((byte1 & 31) << 12 | (byte2 & 63) << 6 | byte3);
        }
      }
    } else if ((byte1 & 248) === 240) {
      const byte2 = position < end ? src[position] : 0;
      if (byte1 > 244 || position >= end || (byte2 & 192) !== 128 || byte1 === 240 && byte2 < 144 || byte1 === 244 && byte2 >= 144) {
        units.push(65533);
      } else {
        position++;
        if (position >= end || (src[position] & 192) !== 128) {
          units.push(65533);
        } else {
          const byte3 = src[position++] & 63;
          if (position >= end || (src[position] & 192) !== 128) {
            units.push(65533);
          } else {
            const byte4 = src[position++] & 63;
            let unit = (byte1 & 7) << 18 | (byte2 & 63) << 12 | byte3 << 6 | byte4;
            unit -= 65536;
            units.push(unit >>> 10 & 1023 | 55296);
            units.push(56320 | unit & 1023);
          }
        }
      }
    } else {
      units.push(65533);
    }
    if (units.length >= 4096) {
      result += fromCharCode.apply(String, units);
      units.length = 0;
    }
  }
  if (units.length > 0) {
    result += fromCharCode.apply(String, units);
  }
  return result;
}
var fromCharCode = String.fromCharCode;
function longStringInJS(length) {
  let start = position;
  let bytes = new Array(length);
  for (let i = 0; i < length; i++) {
    const byte = src[position++];
    if ((byte & 128) > 0) {
      position = start;
      return;
    }
    bytes[i] = byte;
  }
  return fromCharCode.apply(String, bytes);
}
function shortStringInJS(length) {
  if (length < 4) {
    if (length < 2) {
      if (length === 0)
        return "";
      else {
        let a = src[position++];
        if ((a & 128) > 1) {
          position -= 1;
          return;
        }
        return fromCharCode(a);
      }
    } else {
      let a = src[position++];
      let b = src[position++];
      if ((a & 128) > 0 || (b & 128) > 0) {
        position -= 2;
        return;
      }
      if (length < 3)
        return fromCharCode(a, b);
      let c = src[position++];
      if ((c & 128) > 0) {
        position -= 3;
        return;
      }
      return fromCharCode(a, b, c);
    }
  } else {
    let a = src[position++];
    let b = src[position++];
    let c = src[position++];
    let d = src[position++];
    if ((a & 128) > 0 || (b & 128) > 0 || (c & 128) > 0 || (d & 128) > 0) {
      position -= 4;
      return;
    }
    if (length < 6) {
      if (length === 4)
        return fromCharCode(a, b, c, d);
      else {
        let e = src[position++];
        if ((e & 128) > 0) {
          position -= 5;
          return;
        }
        return fromCharCode(a, b, c, d, e);
      }
    } else if (length < 8) {
      let e = src[position++];
      let f = src[position++];
      if ((e & 128) > 0 || (f & 128) > 0) {
        position -= 6;
        return;
      }
      if (length < 7)
        return fromCharCode(a, b, c, d, e, f);
      let g = src[position++];
      if ((g & 128) > 0) {
        position -= 7;
        return;
      }
      return fromCharCode(a, b, c, d, e, f, g);
    } else {
      let e = src[position++];
      let f = src[position++];
      let g = src[position++];
      let h = src[position++];
      if ((e & 128) > 0 || (f & 128) > 0 || (g & 128) > 0 || (h & 128) > 0) {
        position -= 8;
        return;
      }
      if (length < 10) {
        if (length === 8)
          return fromCharCode(a, b, c, d, e, f, g, h);
        else {
          let i = src[position++];
          if ((i & 128) > 0) {
            position -= 9;
            return;
          }
          return fromCharCode(a, b, c, d, e, f, g, h, i);
        }
      } else if (length < 12) {
        let i = src[position++];
        let j = src[position++];
        if ((i & 128) > 0 || (j & 128) > 0) {
          position -= 10;
          return;
        }
        if (length < 11)
          return fromCharCode(a, b, c, d, e, f, g, h, i, j);
        let k = src[position++];
        if ((k & 128) > 0) {
          position -= 11;
          return;
        }
        return fromCharCode(a, b, c, d, e, f, g, h, i, j, k);
      } else {
        let i = src[position++];
        let j = src[position++];
        let k = src[position++];
        let l = src[position++];
        if ((i & 128) > 0 || (j & 128) > 0 || (k & 128) > 0 || (l & 128) > 0) {
          position -= 12;
          return;
        }
        if (length < 14) {
          if (length === 12)
            return fromCharCode(a, b, c, d, e, f, g, h, i, j, k, l);
          else {
            let m = src[position++];
            if ((m & 128) > 0) {
              position -= 13;
              return;
            }
            return fromCharCode(a, b, c, d, e, f, g, h, i, j, k, l, m);
          }
        } else {
          let m = src[position++];
          let n = src[position++];
          if ((m & 128) > 0 || (n & 128) > 0) {
            position -= 14;
            return;
          }
          if (length < 15)
            return fromCharCode(a, b, c, d, e, f, g, h, i, j, k, l, m, n);
          let o = src[position++];
          if ((o & 128) > 0) {
            position -= 15;
            return;
          }
          return fromCharCode(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o);
        }
      }
    }
  }
}
function readBin(length) {
  return currentDecoder.copyBuffers ? (
    // specifically use the copying slice (not the node one)
    Uint8Array.prototype.slice.call(src, position, position += length)
  ) : src.subarray(position, position += length);
}
var f32Array = new Float32Array(1);
var u8Array = new Uint8Array(f32Array.buffer, 0, 4);
function getFloat16() {
  let byte0 = src[position++];
  let byte1 = src[position++];
  let exponent = (byte0 & 127) >> 2;
  if (exponent === 31) {
    if (byte1 || byte0 & 3)
      return NaN;
    return byte0 & 128 ? -Infinity : Infinity;
  }
  if (exponent === 0) {
    let abs = ((byte0 & 3) << 8 | byte1) / (1 << 24);
    return byte0 & 128 ? -abs : abs;
  }
  u8Array[3] = byte0 & 128 | // sign bit
  (exponent >> 1) + 56;
  u8Array[2] = (byte0 & 7) << 5 | // last exponent bit and first two mantissa bits
  byte1 >> 3;
  u8Array[1] = byte1 << 5;
  u8Array[0] = 0;
  return f32Array[0];
}
var keyCache = new Array(4096);
var Tag = class {
  constructor(value, tag) {
    this.value = value;
    this.tag = tag;
  }
};
currentExtensions[0] = (dateString) => {
  return new Date(dateString);
};
currentExtensions[1] = (epochSec) => {
  return new Date(Math.round(epochSec * 1e3));
};
currentExtensions[2] = (buffer) => {
  let value = BigInt(0);
  for (let i = 0, l = buffer.byteLength; i < l; i++) {
    value = BigInt(buffer[i]) + (value << BigInt(8));
  }
  return value;
};
currentExtensions[3] = (buffer) => {
  return BigInt(-1) - currentExtensions[2](buffer);
};
currentExtensions[4] = (fraction) => {
  return +(fraction[1] + "e" + fraction[0]);
};
currentExtensions[5] = (fraction) => {
  return fraction[1] * Math.exp(fraction[0] * Math.log(2));
};
var recordDefinition = (id, structure) => {
  id = id - 57344;
  let existingStructure = currentStructures[id];
  if (existingStructure && existingStructure.isShared) {
    (currentStructures.restoreStructures || (currentStructures.restoreStructures = []))[id] = existingStructure;
  }
  currentStructures[id] = structure;
  structure.read = createStructureReader(structure);
};
currentExtensions[LEGACY_RECORD_INLINE_ID] = (data) => {
  let length = data.length;
  let structure = data[1];
  recordDefinition(data[0], structure);
  let object = {};
  for (let i = 2; i < length; i++) {
    let key = structure[i - 2];
    object[safeKey(key)] = data[i];
  }
  return object;
};
var legacyRecordDefinition = currentExtensions[LEGACY_RECORD_INLINE_ID];
currentExtensions[14] = (value) => {
  if (bundledStrings)
    return bundledStrings[0].slice(bundledStrings.position0, bundledStrings.position0 += value);
  return new Tag(value, 14);
};
currentExtensions[15] = (value) => {
  if (bundledStrings)
    return bundledStrings[1].slice(bundledStrings.position1, bundledStrings.position1 += value);
  return new Tag(value, 15);
};
var glbl = { Error, RegExp };
currentExtensions[27] = (data) => {
  return (glbl[data[0]] || Error)(data[1], data[2]);
};
var packedTable = (read2) => {
  if (!(position < srcEnd)) throw endOfCBORError();
  if (src[position++] != 132)
    throw new Error("Packed values structure must be followed by a 4 element array");
  let newPackedValues = read2();
  if (!Array.isArray(newPackedValues) || !newPackedValues.length)
    throw new Error("Packed values structure must be followed by a 4 element array");
  packedValues = packedValues ? newPackedValues.concat(packedValues.slice(newPackedValues.length)) : newPackedValues;
  packedValues.prefixes = read2();
  packedValues.suffixes = read2();
  return read2();
};
packedTable.handlesRead = true;
currentExtensions[51] = packedTable;
currentExtensions[PACKED_REFERENCE_TAG_ID] = (data) => {
  if (!packedValues) {
    if (currentDecoder.getShared)
      loadShared();
    else
      return new Tag(data, PACKED_REFERENCE_TAG_ID);
  }
  if (typeof data == "number")
    return packedValues[16 + (data >= 0 ? 2 * data : -2 * data - 1)];
  throw new Error("No support for non-integer packed references yet");
};
currentExtensions[28] = (read2) => {
  if (!referenceMap) {
    referenceMap = /* @__PURE__ */ new Map();
    referenceMap.id = 0;
  }
  let id = referenceMap.id++;
  let startingPosition = position;
  let token = src[position];
  let target2;
  if (token >> 5 == 4)
    target2 = [];
  else
    target2 = {};
  let refEntry = { target: target2 };
  referenceMap.set(id, refEntry);
  let targetProperties = read2();
  if (refEntry.used) {
    if (Object.getPrototypeOf(target2) !== Object.getPrototypeOf(targetProperties)) {
      position = startingPosition;
      target2 = targetProperties;
      referenceMap.set(id, { target: target2 });
      targetProperties = read2();
    }
    return Object.assign(target2, targetProperties);
  }
  refEntry.target = targetProperties;
  return targetProperties;
};
currentExtensions[28].handlesRead = true;
currentExtensions[29] = (id) => {
  let refEntry = referenceMap.get(id);
  refEntry.used = true;
  return refEntry.target;
};
currentExtensions[258] = (array) => new Set(array);
(currentExtensions[259] = (read2) => {
  let decoder2 = currentDecoder;
  if (decoder2.mapsAsObjects) {
    decoder2.mapsAsObjects = false;
    restoreMapsAsObject = true;
    try {
      return read2();
    } finally {
      if (restoreMapsAsObject) {
        decoder2.mapsAsObjects = true;
        restoreMapsAsObject = false;
      }
    }
  }
  return read2();
}).handlesRead = true;
function combine(a, b) {
  if (typeof a === "string")
    return a + b;
  if (a instanceof Array)
    return a.concat(b);
  return Object.assign({}, a, b);
}
function getPackedValues() {
  if (!packedValues) {
    if (currentDecoder.getShared)
      loadShared();
    else
      throw new Error("No packed values available");
  }
  return packedValues;
}
var SHARED_DATA_TAG_ID = 1399353956;
currentExtensionRanges.push((tag, input) => {
  if (tag >= 225 && tag <= 255)
    return combine(getPackedValues().prefixes[tag - 224], input);
  if (tag >= 28704 && tag <= 32767)
    return combine(getPackedValues().prefixes[tag - 28672], input);
  if (tag >= 1879052288 && tag <= 2147483647)
    return combine(getPackedValues().prefixes[tag - 1879048192], input);
  if (tag >= 216 && tag <= 223)
    return combine(input, getPackedValues().suffixes[tag - 216]);
  if (tag >= 27647 && tag <= 28671)
    return combine(input, getPackedValues().suffixes[tag - 27639]);
  if (tag >= 1811940352 && tag <= 1879048191)
    return combine(input, getPackedValues().suffixes[tag - 1811939328]);
  if (tag == SHARED_DATA_TAG_ID) {
    return {
      packedValues,
      structures: currentStructures.slice(0),
      version: input
    };
  }
  if (tag == 55799)
    return input;
});
var isLittleEndianMachine = new Uint8Array(new Uint16Array([1]).buffer)[0] == 1;
var typedArrays = [
  Uint8Array,
  Uint8ClampedArray,
  Uint16Array,
  Uint32Array,
  typeof BigUint64Array == "undefined" ? { name: "BigUint64Array" } : BigUint64Array,
  Int8Array,
  Int16Array,
  Int32Array,
  typeof BigInt64Array == "undefined" ? { name: "BigInt64Array" } : BigInt64Array,
  Float32Array,
  Float64Array
];
var typedArrayTags = [64, 68, 69, 70, 71, 72, 77, 78, 79, 85, 86];
for (let i = 0; i < typedArrays.length; i++) {
  registerTypedArray(typedArrays[i], typedArrayTags[i]);
}
function registerTypedArray(TypedArray, tag) {
  let dvMethod = "get" + TypedArray.name.slice(0, -5);
  let bytesPerElement;
  if (typeof TypedArray === "function")
    bytesPerElement = TypedArray.BYTES_PER_ELEMENT;
  else
    TypedArray = null;
  for (let littleEndian = 0; littleEndian < 2; littleEndian++) {
    if (!littleEndian && bytesPerElement == 1)
      continue;
    let sizeShift = bytesPerElement == 2 ? 1 : bytesPerElement == 4 ? 2 : bytesPerElement == 8 ? 3 : 0;
    currentExtensions[littleEndian ? tag : tag - 4] = bytesPerElement == 1 || littleEndian == isLittleEndianMachine ? (buffer) => {
      if (!TypedArray)
        throw new Error("Could not find typed array for code " + tag);
      if (!currentDecoder.copyBuffers) {
        if (bytesPerElement === 1 || bytesPerElement === 2 && !(buffer.byteOffset & 1) || bytesPerElement === 4 && !(buffer.byteOffset & 3) || bytesPerElement === 8 && !(buffer.byteOffset & 7))
          return new TypedArray(buffer.buffer, buffer.byteOffset, buffer.byteLength >> sizeShift);
      }
      return new TypedArray(Uint8Array.prototype.slice.call(buffer, 0).buffer);
    } : (buffer) => {
      if (!TypedArray)
        throw new Error("Could not find typed array for code " + tag);
      let dv = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength);
      let elements = buffer.length >> sizeShift;
      let ta = new TypedArray(elements);
      let method = dv[dvMethod];
      for (let i = 0; i < elements; i++) {
        ta[i] = method.call(dv, i << sizeShift, littleEndian);
      }
      return ta;
    };
  }
}
function readBundleExt() {
  let length = readJustLength();
  let bundlePosition = position + read();
  for (let i = 2; i < length; i++) {
    let bundleLength = readJustLength();
    position += bundleLength;
  }
  let dataPosition = position;
  position = bundlePosition;
  bundledStrings = [readStringJS(readJustLength()), readStringJS(readJustLength())];
  bundledStrings.position0 = 0;
  bundledStrings.position1 = 0;
  bundledStrings.postBundlePosition = position;
  position = dataPosition;
  return read();
}
function readJustLength() {
  if (!(position < srcEnd)) throw endOfCBORError();
  let token = src[position++] & 31;
  if (token > 23) {
    switch (token) {
      case 24:
        if (position >= srcEnd) throw endOfCBORError();
        token = src[position++];
        break;
      case 25:
        if (position + 2 > srcEnd) throw endOfCBORError();
        token = dataView.getUint16(position);
        position += 2;
        break;
      case 26:
        if (position + 4 > srcEnd) throw endOfCBORError();
        token = dataView.getUint32(position);
        position += 4;
        break;
    }
  }
  return token;
}
function loadShared() {
  if (currentDecoder.getShared) {
    let sharedData = saveState(() => {
      src = null;
      return currentDecoder.getShared();
    }) || {};
    let updatedStructures = sharedData.structures || [];
    currentDecoder.sharedVersion = sharedData.version;
    packedValues = currentDecoder.sharedValues = sharedData.packedValues;
    if (currentStructures === true)
      currentDecoder.structures = currentStructures = updatedStructures;
    else
      currentStructures.splice.apply(currentStructures, [0, updatedStructures.length].concat(updatedStructures));
  }
}
function saveState(callback) {
  let savedFragmentEnd = fragmentEnd;
  let savedFragmentReader = fragmentReadString;
  let savedReadFixedString = readFixedString;
  let savedSrcEnd = srcEnd;
  let savedPosition = position;
  let savedStringPosition = stringPosition;
  let savedSrcStringStart = srcStringStart;
  let savedSrcStringEnd = srcStringEnd;
  let savedSrcString = srcString;
  let savedStrings = strings;
  let savedReferenceMap = referenceMap;
  let savedBundledStrings = bundledStrings;
  let savedPackedValues = packedValues;
  let savedSrc = new Uint8Array(src.slice(0, srcEnd));
  let savedStructures = currentStructures;
  let savedDecoder = currentDecoder;
  let savedSequentialMode = sequentialMode;
  let savedRestoreMapsAsObject = restoreMapsAsObject;
  let savedArrayAllocationBudget = arrayAllocationBudget;
  fragmentEnd = 0;
  if (fragmentReadString) readFixedString = fragmentReadString;
  fragmentReadString = null;
  restoreMapsAsObject = false;
  try {
    return callback();
  } catch (error) {
    if (error && (typeof error == "object" || typeof error == "function"))
      nestedDecodeErrors.add(error);
    throw error;
  } finally {
    fragmentEnd = savedFragmentEnd;
    fragmentReadString = savedFragmentReader;
    readFixedString = savedReadFixedString;
    srcEnd = savedSrcEnd;
    position = savedPosition;
    stringPosition = savedStringPosition;
    srcStringStart = savedSrcStringStart;
    srcStringEnd = savedSrcStringEnd;
    srcString = savedSrcString;
    strings = savedStrings;
    referenceMap = savedReferenceMap;
    bundledStrings = savedBundledStrings;
    packedValues = savedPackedValues;
    src = savedSrc;
    sequentialMode = savedSequentialMode;
    currentStructures = savedStructures;
    currentDecoder = savedDecoder;
    restoreMapsAsObject = savedRestoreMapsAsObject;
    arrayAllocationBudget = savedArrayAllocationBudget;
    dataView = new DataView(src.buffer, src.byteOffset, src.byteLength);
  }
}
function clearSource() {
  src = null;
  referenceMap = null;
  currentStructures = null;
}
var fragmentEnd = 0;
var fragmentReadString;
var builtinScanTags = /* @__PURE__ */ new Map([[LEGACY_RECORD_INLINE_ID, legacyRecordDefinition], [259, currentExtensions[259]]]);
var mult10 = new Array(147);
for (let i = 0; i < 256; i++) {
  mult10[i] = +("1e" + Math.floor(45.15 - i * 0.30103));
}
var defaultDecoder = new Decoder({ useRecords: false });
var decode = defaultDecoder.decode;
var decodeMultiple = defaultDecoder.decodeMultiple;
var FLOAT32_OPTIONS = {
  NEVER: 0,
  ALWAYS: 1,
  DECIMAL_ROUND: 3,
  DECIMAL_FIT: 4
};

// node_modules/cbor-x/encode.js
var textEncoder;
try {
  textEncoder = new TextEncoder();
} catch (error) {
}
var extensions;
var extensionClasses;
var Buffer2 = typeof globalThis === "object" && globalThis.Buffer;
var hasNodeBuffer = typeof Buffer2 !== "undefined";
var ByteArrayAllocate = hasNodeBuffer ? Buffer2.allocUnsafeSlow : Uint8Array;
var ByteArray = hasNodeBuffer ? Buffer2 : Uint8Array;
var MAX_STRUCTURES = 256;
var MAX_BUFFER_SIZE = hasNodeBuffer ? 4294967296 : 2144337920;
var throwOnIterable;
var target;
var targetView;
var position2 = 0;
var safeEnd;
var bundledStrings2 = null;
var MAX_BUNDLE_SIZE = 61440;
var hasNonLatin = /[\u0080-\uFFFF]/;
var RECORD_SYMBOL = Symbol("record-id");
var Encoder = class extends Decoder {
  constructor(options) {
    super(options);
    this.offset = 0;
    let typeBuffer;
    let start;
    let sharedStructures;
    let hasSharedUpdate;
    let structures;
    let referenceMap2;
    options = options || {};
    let encodeUtf8 = ByteArray.prototype.utf8Write ? function(string, position3) {
      return target.utf8Write(string, position3, target.byteLength - position3);
    } : textEncoder && textEncoder.encodeInto ? function(string, position3) {
      return textEncoder.encodeInto(string, target.subarray(position3)).written;
    } : false;
    let encoder = this;
    let hasSharedStructures = options.structures || options.saveStructures;
    let maxSharedStructures = options.maxSharedStructures;
    if (maxSharedStructures == null)
      maxSharedStructures = hasSharedStructures ? 128 : 0;
    if (maxSharedStructures > 8190)
      throw new Error("Maximum maxSharedStructure is 8190");
    let isSequential = options.sequential;
    if (isSequential) {
      maxSharedStructures = 0;
    }
    if (!this.structures)
      this.structures = [];
    if (this.saveStructures)
      this.saveShared = this.saveStructures;
    let samplingPackedValues, packedObjectMap2, sharedValues = options.sharedValues;
    let sharedPackedObjectMap2;
    if (sharedValues) {
      sharedPackedObjectMap2 = /* @__PURE__ */ Object.create(null);
      for (let i = 0, l = sharedValues.length; i < l; i++) {
        sharedPackedObjectMap2[sharedValues[i]] = i;
      }
    }
    let recordIdsToRemove = [];
    let transitionsCount = 0;
    let serializationsSinceTransitionRebuild = 0;
    this.mapEncode = function(value, encodeOptions) {
      if (this._keyMap && !this._mapped) {
        switch (value.constructor.name) {
          case "Array":
            value = value.map((r) => this.encodeKeys(r));
            break;
        }
      }
      return this.encode(value, encodeOptions);
    };
    this.encode = function(value, encodeOptions) {
      if (!target) {
        target = new ByteArrayAllocate(8192);
        targetView = new DataView(target.buffer, 0, 8192);
        position2 = 0;
      }
      safeEnd = target.length - 10;
      if (safeEnd - position2 < 2048) {
        target = new ByteArrayAllocate(target.length);
        targetView = new DataView(target.buffer, 0, target.length);
        safeEnd = target.length - 10;
        position2 = 0;
      } else if (encodeOptions === REUSE_BUFFER_MODE)
        position2 = position2 + 7 & 2147483640;
      start = position2;
      if (encoder.useSelfDescribedHeader) {
        targetView.setUint32(position2, 3654940416);
        position2 += 3;
      }
      referenceMap2 = encoder.structuredClone ? /* @__PURE__ */ new Map() : null;
      if (encoder.bundleStrings && typeof value !== "string") {
        bundledStrings2 = [];
        bundledStrings2.size = Infinity;
      } else
        bundledStrings2 = null;
      sharedStructures = encoder.structures;
      if (sharedStructures) {
        if (sharedStructures.uninitialized) {
          let sharedData = encoder.getShared() || {};
          encoder.structures = sharedStructures = sharedData.structures || [];
          encoder.sharedVersion = sharedData.version;
          let sharedValues2 = encoder.sharedValues = sharedData.packedValues;
          if (sharedValues2) {
            sharedPackedObjectMap2 = {};
            for (let i = 0, l = sharedValues2.length; i < l; i++)
              sharedPackedObjectMap2[sharedValues2[i]] = i;
          }
        }
        let sharedStructuresLength = sharedStructures.length;
        if (sharedStructuresLength > maxSharedStructures && !isSequential)
          sharedStructuresLength = maxSharedStructures;
        if (!sharedStructures.transitions) {
          sharedStructures.transitions = /* @__PURE__ */ Object.create(null);
          for (let i = 0; i < sharedStructuresLength; i++) {
            let keys = sharedStructures[i];
            if (!keys)
              continue;
            let nextTransition, transition = sharedStructures.transitions;
            for (let j = 0, l = keys.length; j < l; j++) {
              if (transition[RECORD_SYMBOL] === void 0)
                transition[RECORD_SYMBOL] = i;
              let key = keys[j];
              nextTransition = transition[key];
              if (!nextTransition) {
                nextTransition = transition[key] = /* @__PURE__ */ Object.create(null);
              }
              transition = nextTransition;
            }
            transition[RECORD_SYMBOL] = i | 1048576;
          }
        }
        if (!isSequential)
          sharedStructures.nextId = sharedStructuresLength;
      }
      if (hasSharedUpdate)
        hasSharedUpdate = false;
      structures = sharedStructures || [];
      packedObjectMap2 = sharedPackedObjectMap2;
      if (options.pack) {
        let packedValues2 = /* @__PURE__ */ new Map();
        packedValues2.values = [];
        packedValues2.encoder = encoder;
        packedValues2.maxValues = options.maxPrivatePackedValues || (sharedPackedObjectMap2 ? 16 : Infinity);
        packedValues2.objectMap = sharedPackedObjectMap2 || false;
        packedValues2.samplingPackedValues = samplingPackedValues;
        findRepetitiveStrings(value, packedValues2);
        if (packedValues2.values.length > 0) {
          target[position2++] = 216;
          target[position2++] = 51;
          writeArrayHeader(4);
          let valuesArray = packedValues2.values;
          encode2(valuesArray);
          writeArrayHeader(0);
          writeArrayHeader(0);
          packedObjectMap2 = Object.create(sharedPackedObjectMap2 || null);
          for (let i = 0, l = valuesArray.length; i < l; i++) {
            packedObjectMap2[valuesArray[i]] = i;
          }
        }
      }
      throwOnIterable = encodeOptions & THROW_ON_ITERABLE;
      try {
        if (throwOnIterable)
          return;
        encode2(value);
        if (bundledStrings2 && bundledStrings2.position) {
          writeBundles(start, encode2);
        }
        encoder.offset = position2;
        if (referenceMap2 && referenceMap2.idsToInsert) {
          position2 += referenceMap2.idsToInsert.length * 2;
          if (position2 > safeEnd)
            makeRoom(position2);
          encoder.offset = position2;
          let serialized = insertIds(target.subarray(start, position2), referenceMap2.idsToInsert);
          referenceMap2 = null;
          return serialized;
        }
        if (encodeOptions & REUSE_BUFFER_MODE) {
          target.start = start;
          target.end = position2;
          return target;
        }
        return target.subarray(start, position2);
      } finally {
        if (sharedStructures) {
          if (serializationsSinceTransitionRebuild < 10)
            serializationsSinceTransitionRebuild++;
          if (sharedStructures.length > maxSharedStructures)
            sharedStructures.length = maxSharedStructures;
          if (transitionsCount > 1e4) {
            sharedStructures.transitions = null;
            serializationsSinceTransitionRebuild = 0;
            transitionsCount = 0;
            if (recordIdsToRemove.length > 0)
              recordIdsToRemove = [];
          } else if (recordIdsToRemove.length > 0 && !isSequential) {
            for (let i = 0, l = recordIdsToRemove.length; i < l; i++) {
              recordIdsToRemove[i][RECORD_SYMBOL] = void 0;
            }
            recordIdsToRemove = [];
          }
        }
        if (hasSharedUpdate && encoder.saveShared) {
          if (encoder.structures.length > maxSharedStructures) {
            encoder.structures = encoder.structures.slice(0, maxSharedStructures);
          }
          let returnBuffer = target.subarray(start, position2);
          if (encoder.updateSharedData() === false)
            return encoder.encode(value);
          return returnBuffer;
        }
        if (encodeOptions & RESET_BUFFER_MODE)
          position2 = start;
      }
    };
    this.findCommonStringsToPack = () => {
      samplingPackedValues = /* @__PURE__ */ new Map();
      if (!sharedPackedObjectMap2)
        sharedPackedObjectMap2 = /* @__PURE__ */ Object.create(null);
      return (options2) => {
        let threshold = options2 && options2.threshold || 4;
        let position3 = this.pack ? options2.maxPrivatePackedValues || 16 : 0;
        if (!sharedValues)
          sharedValues = this.sharedValues = [];
        for (let [key, status] of samplingPackedValues) {
          if (status.count > threshold) {
            sharedPackedObjectMap2[key] = position3++;
            sharedValues.push(key);
            hasSharedUpdate = true;
          }
        }
        while (this.saveShared && this.updateSharedData() === false) {
        }
        samplingPackedValues = null;
      };
    };
    const encode2 = (value) => {
      if (position2 > safeEnd)
        target = makeRoom(position2);
      var type = typeof value;
      var length;
      if (type === "string") {
        if (packedObjectMap2) {
          let packedPosition = packedObjectMap2[value];
          if (packedPosition >= 0) {
            if (packedPosition < 16)
              target[position2++] = packedPosition + 224;
            else {
              target[position2++] = 198;
              if (packedPosition & 1)
                encode2(15 - packedPosition >> 1);
              else
                encode2(packedPosition - 16 >> 1);
            }
            return;
          } else if (samplingPackedValues && !options.pack) {
            let status = samplingPackedValues.get(value);
            if (status)
              status.count++;
            else
              samplingPackedValues.set(value, {
                count: 1
              });
          }
        }
        let strLength = value.length;
        if (bundledStrings2 && strLength >= 4 && strLength < 1024) {
          if ((bundledStrings2.size += strLength) > MAX_BUNDLE_SIZE) {
            let extStart;
            let maxBytes2 = (bundledStrings2[0] ? bundledStrings2[0].length * 3 + bundledStrings2[1].length : 0) + 10;
            if (position2 + maxBytes2 > safeEnd)
              target = makeRoom(position2 + maxBytes2);
            target[position2++] = 217;
            target[position2++] = 223;
            target[position2++] = 249;
            target[position2++] = bundledStrings2.position ? 132 : 130;
            target[position2++] = 26;
            extStart = position2 - start;
            position2 += 4;
            if (bundledStrings2.position) {
              writeBundles(start, encode2);
            }
            bundledStrings2 = ["", ""];
            bundledStrings2.size = 0;
            bundledStrings2.position = extStart;
          }
          let twoByte = hasNonLatin.test(value);
          bundledStrings2[twoByte ? 0 : 1] += value;
          target[position2++] = twoByte ? 206 : 207;
          encode2(strLength);
          return;
        }
        let headerSize;
        if (strLength < 32) {
          headerSize = 1;
        } else if (strLength < 256) {
          headerSize = 2;
        } else if (strLength < 65536) {
          headerSize = 3;
        } else {
          headerSize = 5;
        }
        let maxBytes = strLength * 3;
        if (position2 + maxBytes > safeEnd)
          target = makeRoom(position2 + maxBytes);
        if (strLength < 64 || !encodeUtf8) {
          let i, c1, c2, strPosition = position2 + headerSize;
          for (i = 0; i < strLength; i++) {
            c1 = value.charCodeAt(i);
            if (c1 < 128) {
              target[strPosition++] = c1;
            } else if (c1 < 2048) {
              target[strPosition++] = c1 >> 6 | 192;
              target[strPosition++] = c1 & 63 | 128;
            } else if ((c1 & 64512) === 55296 && ((c2 = value.charCodeAt(i + 1)) & 64512) === 56320) {
              c1 = 65536 + ((c1 & 1023) << 10) + (c2 & 1023);
              i++;
              target[strPosition++] = c1 >> 18 | 240;
              target[strPosition++] = c1 >> 12 & 63 | 128;
              target[strPosition++] = c1 >> 6 & 63 | 128;
              target[strPosition++] = c1 & 63 | 128;
            } else {
              target[strPosition++] = c1 >> 12 | 224;
              target[strPosition++] = c1 >> 6 & 63 | 128;
              target[strPosition++] = c1 & 63 | 128;
            }
          }
          length = strPosition - position2 - headerSize;
        } else {
          length = encodeUtf8(value, position2 + headerSize, maxBytes);
        }
        if (length < 24) {
          target[position2++] = 96 | length;
        } else if (length < 256) {
          if (headerSize < 2) {
            target.copyWithin(position2 + 2, position2 + 1, position2 + 1 + length);
          }
          target[position2++] = 120;
          target[position2++] = length;
        } else if (length < 65536) {
          if (headerSize < 3) {
            target.copyWithin(position2 + 3, position2 + 2, position2 + 2 + length);
          }
          target[position2++] = 121;
          target[position2++] = length >> 8;
          target[position2++] = length & 255;
        } else {
          if (headerSize < 5) {
            target.copyWithin(position2 + 5, position2 + 3, position2 + 3 + length);
          }
          target[position2++] = 122;
          targetView.setUint32(position2, length);
          position2 += 4;
        }
        position2 += length;
      } else if (type === "number") {
        if (!this.alwaysUseFloat && value >>> 0 === value) {
          if (value < 24) {
            target[position2++] = value;
          } else if (value < 256) {
            target[position2++] = 24;
            target[position2++] = value;
          } else if (value < 65536) {
            target[position2++] = 25;
            target[position2++] = value >> 8;
            target[position2++] = value & 255;
          } else {
            target[position2++] = 26;
            targetView.setUint32(position2, value);
            position2 += 4;
          }
        } else if (!this.alwaysUseFloat && value >> 0 === value) {
          if (value >= -24) {
            target[position2++] = 31 - value;
          } else if (value >= -256) {
            target[position2++] = 56;
            target[position2++] = ~value;
          } else if (value >= -65536) {
            target[position2++] = 57;
            targetView.setUint16(position2, ~value);
            position2 += 2;
          } else {
            target[position2++] = 58;
            targetView.setUint32(position2, ~value);
            position2 += 4;
          }
        } else if (!this.alwaysUseFloat && value < 0 && value >= -4294967296 && Math.floor(value) === value) {
          target[position2++] = 58;
          targetView.setUint32(position2, -1 - value);
          position2 += 4;
        } else {
          let useFloat32;
          if ((useFloat32 = this.useFloat32) > 0 && value < 4294967296 && value >= -2147483648) {
            target[position2++] = 250;
            targetView.setFloat32(position2, value);
            let xShifted;
            if (useFloat32 < 4 || // this checks for rounding of numbers that were encoded in 32-bit float to nearest significant decimal digit that could be preserved
            (xShifted = value * mult10[(target[position2] & 127) << 1 | target[position2 + 1] >> 7]) >> 0 === xShifted) {
              position2 += 4;
              return;
            } else
              position2--;
          }
          target[position2++] = 251;
          targetView.setFloat64(position2, value);
          position2 += 8;
        }
      } else if (type === "object") {
        if (!value)
          target[position2++] = 246;
        else {
          if (referenceMap2) {
            let referee = referenceMap2.get(value);
            if (referee) {
              target[position2++] = 216;
              target[position2++] = 29;
              target[position2++] = 25;
              if (!referee.references) {
                let idsToInsert = referenceMap2.idsToInsert || (referenceMap2.idsToInsert = []);
                referee.references = [];
                idsToInsert.push(referee);
              }
              referee.references.push(position2 - start);
              position2 += 2;
              return;
            } else
              referenceMap2.set(value, { offset: position2 - start });
          }
          let constructor = value.constructor;
          if (constructor === Object) {
            if (this.skipFunction === true) {
              value = Object.fromEntries([...Object.keys(value).filter((x) => typeof value[x] !== "function").map((x) => [x, value[x]])]);
            }
            writeObject(value);
          } else if (constructor === Array) {
            length = value.length;
            if (length < 24) {
              target[position2++] = 128 | length;
            } else {
              writeArrayHeader(length);
            }
            for (let i = 0; i < length; i++) {
              encode2(value[i]);
            }
          } else if (constructor === Map) {
            if (this.mapsAsObjects ? this.useTag259ForMaps !== false : this.useTag259ForMaps) {
              target[position2++] = 217;
              target[position2++] = 1;
              target[position2++] = 3;
            }
            length = value.size;
            if (length < 24) {
              target[position2++] = 160 | length;
            } else if (length < 256) {
              target[position2++] = 184;
              target[position2++] = length;
            } else if (length < 65536) {
              target[position2++] = 185;
              target[position2++] = length >> 8;
              target[position2++] = length & 255;
            } else {
              target[position2++] = 186;
              targetView.setUint32(position2, length);
              position2 += 4;
            }
            if (encoder.keyMap) {
              for (let [key, entryValue] of value) {
                encode2(encoder.encodeKey(key));
                encode2(entryValue);
              }
            } else {
              for (let [key, entryValue] of value) {
                encode2(key);
                encode2(entryValue);
              }
            }
          } else {
            for (let i = 0, l = extensions.length; i < l; i++) {
              let extensionClass = extensionClasses[i];
              if (value instanceof extensionClass) {
                let extension = extensions[i];
                let tag = extension.tag;
                if (tag == void 0)
                  tag = extension.getTag && extension.getTag.call(this, value);
                if (tag < 24) {
                  target[position2++] = 192 | tag;
                } else if (tag < 256) {
                  target[position2++] = 216;
                  target[position2++] = tag;
                } else if (tag < 65536) {
                  target[position2++] = 217;
                  target[position2++] = tag >> 8;
                  target[position2++] = tag & 255;
                } else if (tag > -1) {
                  target[position2++] = 218;
                  targetView.setUint32(position2, tag);
                  position2 += 4;
                }
                extension.encode.call(this, value, encode2, makeRoom);
                return;
              }
            }
            if (value[Symbol.iterator]) {
              if (throwOnIterable) {
                let error = new Error("Iterable should be serialized as iterator");
                error.iteratorNotHandled = true;
                throw error;
              }
              target[position2++] = 159;
              for (let entry of value) {
                encode2(entry);
              }
              target[position2++] = 255;
              return;
            }
            if (value[Symbol.asyncIterator] || isBlob(value)) {
              let error = new Error("Iterable/blob should be serialized as iterator");
              error.iteratorNotHandled = true;
              throw error;
            }
            if (this.useToJSON && value.toJSON) {
              const json = value.toJSON();
              if (json !== value)
                return encode2(json);
            }
            if (constructor === DataView) {
              writeBuffer(new Uint8Array(value.buffer, value.byteOffset, value.byteLength), makeRoom);
              return;
            }
            writeObject(value);
          }
        }
      } else if (type === "boolean") {
        target[position2++] = value ? 245 : 244;
      } else if (type === "bigint") {
        if (value < BigInt(1) << BigInt(64) && value >= 0) {
          target[position2++] = 27;
          targetView.setBigUint64(position2, value);
        } else if (value > -(BigInt(1) << BigInt(64)) && value < 0) {
          target[position2++] = 59;
          targetView.setBigUint64(position2, -value - BigInt(1));
        } else {
          if (this.largeBigIntToFloat) {
            target[position2++] = 251;
            targetView.setFloat64(position2, Number(value));
          } else {
            if (value >= BigInt(0))
              target[position2++] = 194;
            else {
              target[position2++] = 195;
              value = BigInt(-1) - value;
            }
            let bytes = [];
            while (value) {
              bytes.push(Number(value & BigInt(255)));
              value >>= BigInt(8);
            }
            writeBuffer(new Uint8Array(bytes.reverse()), makeRoom);
            return;
          }
        }
        position2 += 8;
      } else if (type === "undefined") {
        target[position2++] = 247;
      } else {
        throw new Error("Unknown type: " + type);
      }
    };
    const writeObject = this.useRecords === false ? this.variableMapSize ? (object) => {
      let keys = Object.keys(object);
      let vals = Object.values(object);
      let length = keys.length;
      if (length < 24) {
        target[position2++] = 160 | length;
      } else if (length < 256) {
        target[position2++] = 184;
        target[position2++] = length;
      } else if (length < 65536) {
        target[position2++] = 185;
        target[position2++] = length >> 8;
        target[position2++] = length & 255;
      } else {
        target[position2++] = 186;
        targetView.setUint32(position2, length);
        position2 += 4;
      }
      let key;
      if (encoder.keyMap) {
        for (let i = 0; i < length; i++) {
          encode2(encoder.encodeKey(keys[i]));
          encode2(vals[i]);
        }
      } else {
        for (let i = 0; i < length; i++) {
          encode2(keys[i]);
          encode2(vals[i]);
        }
      }
    } : (object) => {
      target[position2++] = 185;
      let objectOffset = position2 - start;
      position2 += 2;
      let size = 0;
      if (encoder.keyMap) {
        for (let key in object) if (typeof object.hasOwnProperty !== "function" || object.hasOwnProperty(key)) {
          encode2(encoder.encodeKey(key));
          encode2(object[key]);
          size++;
        }
      } else {
        for (let key in object) if (typeof object.hasOwnProperty !== "function" || object.hasOwnProperty(key)) {
          encode2(key);
          encode2(object[key]);
          size++;
        }
      }
      if (size < 65536) {
        target[objectOffset++ + start] = size >> 8;
        target[objectOffset + start] = size & 255;
      } else {
        if (position2 + 2 > safeEnd)
          makeRoom(position2 + 2);
        let headerPosition = objectOffset + start;
        target.copyWithin(headerPosition + 4, headerPosition + 2, position2);
        position2 += 2;
        target[headerPosition - 1] = 186;
        targetView.setUint32(headerPosition, size);
      }
    } : (object, skipValues) => {
      let nextTransition, transition = structures.transitions || (structures.transitions = /* @__PURE__ */ Object.create(null));
      let newTransitions = 0;
      let length = 0;
      let parentRecordId;
      let keys;
      if (this.keyMap) {
        keys = Object.keys(object).map((k) => this.encodeKey(k));
        length = keys.length;
        for (let i = 0; i < length; i++) {
          let key = keys[i];
          nextTransition = transition[key];
          if (!nextTransition) {
            nextTransition = transition[key] = /* @__PURE__ */ Object.create(null);
            newTransitions++;
          }
          transition = nextTransition;
        }
      } else {
        for (let key in object) if (typeof object.hasOwnProperty !== "function" || object.hasOwnProperty(key)) {
          nextTransition = transition[key];
          if (!nextTransition) {
            if (transition[RECORD_SYMBOL] & 1048576) {
              parentRecordId = transition[RECORD_SYMBOL] & 65535;
            }
            nextTransition = transition[key] = /* @__PURE__ */ Object.create(null);
            newTransitions++;
          }
          transition = nextTransition;
          length++;
        }
      }
      let recordId = transition[RECORD_SYMBOL];
      if (recordId !== void 0) {
        recordId &= 65535;
        target[position2++] = 217;
        target[position2++] = recordId >> 8 | 224;
        target[position2++] = recordId & 255;
      } else {
        if (!keys)
          keys = transition.__keys__ || (transition.__keys__ = Object.keys(object));
        if (parentRecordId === void 0) {
          recordId = structures.nextId++;
          if (!recordId) {
            recordId = 0;
            structures.nextId = 1;
          }
          if (recordId >= MAX_STRUCTURES) {
            structures.nextId = (recordId = maxSharedStructures) + 1;
          }
        } else {
          recordId = parentRecordId;
        }
        structures[recordId] = keys;
        if (recordId < maxSharedStructures) {
          target[position2++] = 217;
          target[position2++] = recordId >> 8 | 224;
          target[position2++] = recordId & 255;
          transition = structures.transitions;
          for (let i = 0; i < length; i++) {
            if (transition[RECORD_SYMBOL] === void 0 || transition[RECORD_SYMBOL] & 1048576)
              transition[RECORD_SYMBOL] = recordId;
            transition = transition[keys[i]];
          }
          transition[RECORD_SYMBOL] = recordId | 1048576;
          hasSharedUpdate = true;
        } else {
          transition[RECORD_SYMBOL] = recordId;
          targetView.setUint32(position2, 3655335680);
          position2 += 3;
          if (newTransitions)
            transitionsCount += serializationsSinceTransitionRebuild * newTransitions;
          if (recordIdsToRemove.length >= MAX_STRUCTURES - maxSharedStructures)
            recordIdsToRemove.shift()[RECORD_SYMBOL] = void 0;
          recordIdsToRemove.push(transition);
          writeArrayHeader(length + 2);
          encode2(57344 + recordId);
          encode2(keys);
          if (skipValues) return;
          for (let key in object)
            if (typeof object.hasOwnProperty !== "function" || object.hasOwnProperty(key))
              encode2(object[key]);
          return;
        }
      }
      if (length < 24) {
        target[position2++] = 128 | length;
      } else {
        writeArrayHeader(length);
      }
      if (skipValues) return;
      for (let key in object)
        if (typeof object.hasOwnProperty !== "function" || object.hasOwnProperty(key))
          encode2(object[key]);
    };
    const makeRoom = (end) => {
      let newSize;
      if (end > 16777216) {
        if (end - start > MAX_BUFFER_SIZE)
          throw new Error("Encoded buffer would be larger than maximum buffer size");
        newSize = Math.min(
          MAX_BUFFER_SIZE,
          Math.round(Math.max((end - start) * (end > 67108864 ? 1.25 : 2), 4194304) / 4096) * 4096
        );
      } else
        newSize = (Math.max(end - start << 2, target.length - 1) >> 12) + 1 << 12;
      let newBuffer = new ByteArrayAllocate(newSize);
      targetView = new DataView(newBuffer.buffer, 0, newSize);
      if (target.copy)
        target.copy(newBuffer, 0, start, end);
      else
        newBuffer.set(target.slice(start, end));
      position2 -= start;
      start = 0;
      safeEnd = newBuffer.length - 10;
      return target = newBuffer;
    };
    let chunkThreshold = 100;
    let continuedChunkThreshold = 1e3;
    this.encodeAsIterable = function(value, options2) {
      return startEncoding(value, options2, encodeObjectAsIterable);
    };
    this.encodeAsAsyncIterable = function(value, options2) {
      return startEncoding(value, options2, encodeObjectAsAsyncIterable);
    };
    function* encodeObjectAsIterable(object, iterateProperties, finalIterable) {
      let constructor = object.constructor;
      if (constructor === Object) {
        let useRecords = encoder.useRecords !== false;
        if (useRecords)
          writeObject(object, true);
        else
          writeEntityLength(Object.keys(object).length, 160);
        for (let key in object) {
          let value = object[key];
          if (!useRecords) encode2(key);
          if (value && typeof value === "object") {
            if (iterateProperties[key])
              yield* encodeObjectAsIterable(value, iterateProperties[key]);
            else
              yield* tryEncode(value, iterateProperties, key);
          } else encode2(value);
        }
      } else if (constructor === Array) {
        let length = object.length;
        writeArrayHeader(length);
        for (let i = 0; i < length; i++) {
          let value = object[i];
          if (value && (typeof value === "object" || position2 - start > chunkThreshold)) {
            if (iterateProperties.element)
              yield* encodeObjectAsIterable(value, iterateProperties.element);
            else
              yield* tryEncode(value, iterateProperties, "element");
          } else encode2(value);
        }
      } else if (object[Symbol.iterator] && !object.buffer) {
        target[position2++] = 159;
        for (let value of object) {
          if (value && (typeof value === "object" || position2 - start > chunkThreshold)) {
            if (iterateProperties.element)
              yield* encodeObjectAsIterable(value, iterateProperties.element);
            else
              yield* tryEncode(value, iterateProperties, "element");
          } else encode2(value);
        }
        target[position2++] = 255;
      } else if (isBlob(object)) {
        writeEntityLength(object.size, 64);
        yield target.subarray(start, position2);
        yield object;
        restartEncoding();
      } else if (object[Symbol.asyncIterator]) {
        target[position2++] = 159;
        yield target.subarray(start, position2);
        yield object;
        restartEncoding();
        target[position2++] = 255;
      } else {
        encode2(object);
      }
      if (finalIterable && position2 > start) yield target.subarray(start, position2);
      else if (position2 - start > chunkThreshold) {
        yield target.subarray(start, position2);
        restartEncoding();
      }
    }
    function* tryEncode(value, iterateProperties, key) {
      let restart = position2 - start;
      try {
        encode2(value);
        if (position2 - start > chunkThreshold) {
          yield target.subarray(start, position2);
          restartEncoding();
        }
      } catch (error) {
        if (error.iteratorNotHandled) {
          iterateProperties[key] = {};
          position2 = start + restart;
          yield* encodeObjectAsIterable.call(this, value, iterateProperties[key]);
        } else throw error;
      }
    }
    function restartEncoding() {
      chunkThreshold = continuedChunkThreshold;
      encoder.encode(null, THROW_ON_ITERABLE);
    }
    function startEncoding(value, options2, encodeIterable) {
      if (options2 && options2.chunkThreshold)
        chunkThreshold = continuedChunkThreshold = options2.chunkThreshold;
      else
        chunkThreshold = 100;
      if (value && typeof value === "object") {
        encoder.encode(null, THROW_ON_ITERABLE);
        return encodeIterable(value, encoder.iterateProperties || (encoder.iterateProperties = {}), true);
      }
      return [encoder.encode(value)];
    }
    async function* encodeObjectAsAsyncIterable(value, iterateProperties) {
      for (let encodedValue of encodeObjectAsIterable(value, iterateProperties, true)) {
        let constructor = encodedValue.constructor;
        if (constructor === ByteArray || constructor === Uint8Array)
          yield encodedValue;
        else if (isBlob(encodedValue)) {
          let reader = encodedValue.stream().getReader();
          let next;
          while (!(next = await reader.read()).done) {
            yield next.value;
          }
        } else if (encodedValue[Symbol.asyncIterator]) {
          for await (let asyncValue of encodedValue) {
            restartEncoding();
            if (asyncValue)
              yield* encodeObjectAsAsyncIterable(asyncValue, iterateProperties.async || (iterateProperties.async = {}));
            else yield encoder.encode(asyncValue);
          }
        } else {
          yield encodedValue;
        }
      }
    }
  }
  useBuffer(buffer) {
    target = buffer;
    targetView = new DataView(target.buffer, target.byteOffset, target.byteLength);
    position2 = 0;
  }
  clearSharedData() {
    if (this.structures)
      this.structures = [];
    if (this.sharedValues)
      this.sharedValues = void 0;
  }
  updateSharedData() {
    let lastVersion = this.sharedVersion || 0;
    this.sharedVersion = lastVersion + 1;
    let structuresCopy = this.structures.slice(0);
    let sharedData = new SharedData(structuresCopy, this.sharedValues, this.sharedVersion);
    let saveResults = this.saveShared(
      sharedData,
      (existingShared) => (existingShared && existingShared.version || 0) == lastVersion
    );
    if (saveResults === false) {
      sharedData = this.getShared() || {};
      this.structures = sharedData.structures || [];
      this.sharedValues = sharedData.packedValues;
      this.sharedVersion = sharedData.version;
      this.structures.nextId = this.structures.length;
    } else {
      structuresCopy.forEach((structure, i) => this.structures[i] = structure);
    }
    return saveResults;
  }
};
function writeEntityLength(length, majorValue) {
  if (length < 24)
    target[position2++] = majorValue | length;
  else if (length < 256) {
    target[position2++] = majorValue | 24;
    target[position2++] = length;
  } else if (length < 65536) {
    target[position2++] = majorValue | 25;
    target[position2++] = length >> 8;
    target[position2++] = length & 255;
  } else {
    target[position2++] = majorValue | 26;
    targetView.setUint32(position2, length);
    position2 += 4;
  }
}
var SharedData = class {
  constructor(structures, values, version) {
    this.structures = structures;
    this.packedValues = values;
    this.version = version;
  }
};
function writeArrayHeader(length) {
  if (length < 24)
    target[position2++] = 128 | length;
  else if (length < 256) {
    target[position2++] = 152;
    target[position2++] = length;
  } else if (length < 65536) {
    target[position2++] = 153;
    target[position2++] = length >> 8;
    target[position2++] = length & 255;
  } else {
    target[position2++] = 154;
    targetView.setUint32(position2, length);
    position2 += 4;
  }
}
var BlobConstructor = typeof Blob === "undefined" ? function() {
} : Blob;
function isBlob(object) {
  if (object instanceof BlobConstructor)
    return true;
  let tag = object[Symbol.toStringTag];
  return tag === "Blob" || tag === "File";
}
function findRepetitiveStrings(value, packedValues2) {
  switch (typeof value) {
    case "string":
      if (value.length > 3) {
        if (packedValues2.objectMap[value] > -1 || packedValues2.values.length >= packedValues2.maxValues)
          return;
        let packedStatus = packedValues2.get(value);
        if (packedStatus) {
          if (++packedStatus.count == 2) {
            packedValues2.values.push(value);
          }
        } else {
          packedValues2.set(value, {
            count: 1
          });
          if (packedValues2.samplingPackedValues) {
            let status = packedValues2.samplingPackedValues.get(value);
            if (status)
              status.count++;
            else
              packedValues2.samplingPackedValues.set(value, {
                count: 1
              });
          }
        }
      }
      break;
    case "object":
      if (value) {
        if (value instanceof Array) {
          for (let i = 0, l = value.length; i < l; i++) {
            findRepetitiveStrings(value[i], packedValues2);
          }
        } else {
          let includeKeys = !packedValues2.encoder.useRecords;
          for (var key in value) {
            if (value.hasOwnProperty(key)) {
              if (includeKeys)
                findRepetitiveStrings(key, packedValues2);
              findRepetitiveStrings(value[key], packedValues2);
            }
          }
        }
      }
      break;
    case "function":
      console.log(value);
  }
}
var isLittleEndianMachine2 = new Uint8Array(new Uint16Array([1]).buffer)[0] == 1;
extensionClasses = [
  Date,
  Set,
  Error,
  RegExp,
  Tag,
  ArrayBuffer,
  Uint8Array,
  Uint8ClampedArray,
  Uint16Array,
  Uint32Array,
  typeof BigUint64Array == "undefined" ? function() {
  } : BigUint64Array,
  Int8Array,
  Int16Array,
  Int32Array,
  typeof BigInt64Array == "undefined" ? function() {
  } : BigInt64Array,
  Float32Array,
  Float64Array,
  SharedData
];
extensions = [
  {
    // Date
    tag: 1,
    encode(date, encode2) {
      let seconds = date.getTime() / 1e3;
      if ((this.useTimestamp32 || date.getMilliseconds() === 0) && seconds >= 0 && seconds < 4294967296) {
        target[position2++] = 26;
        targetView.setUint32(position2, seconds);
        position2 += 4;
      } else {
        target[position2++] = 251;
        targetView.setFloat64(position2, seconds);
        position2 += 8;
      }
    }
  },
  {
    // Set
    tag: 258,
    // https://github.com/input-output-hk/cbor-sets-spec/blob/master/CBOR_SETS.md
    encode(set, encode2) {
      let array = Array.from(set);
      encode2(array);
    }
  },
  {
    // Error
    tag: 27,
    // http://cbor.schmorp.de/generic-object
    encode(error, encode2) {
      encode2([error.name, error.message]);
    }
  },
  {
    // RegExp
    tag: 27,
    // http://cbor.schmorp.de/generic-object
    encode(regex, encode2) {
      encode2(["RegExp", regex.source, regex.flags]);
    }
  },
  {
    // Tag
    getTag(tag) {
      return tag.tag;
    },
    encode(tag, encode2) {
      encode2(tag.value);
    }
  },
  {
    // ArrayBuffer
    encode(arrayBuffer, encode2, makeRoom) {
      writeBuffer(arrayBuffer, makeRoom);
    }
  },
  {
    // Uint8Array
    getTag(typedArray) {
      if (typedArray.constructor === Uint8Array) {
        if (this.tagUint8Array || hasNodeBuffer && this.tagUint8Array !== false)
          return 64;
      }
    },
    encode(typedArray, encode2, makeRoom) {
      writeBuffer(typedArray, makeRoom);
    }
  },
  typedArrayEncoder(68, 1),
  typedArrayEncoder(69, 2),
  typedArrayEncoder(70, 4),
  typedArrayEncoder(71, 8),
  typedArrayEncoder(72, 1),
  typedArrayEncoder(77, 2),
  typedArrayEncoder(78, 4),
  typedArrayEncoder(79, 8),
  typedArrayEncoder(85, 4),
  typedArrayEncoder(86, 8),
  {
    encode(sharedData, encode2) {
      let packedValues2 = sharedData.packedValues || [];
      let sharedStructures = sharedData.structures || [];
      if (packedValues2.values.length > 0) {
        target[position2++] = 216;
        target[position2++] = 51;
        writeArrayHeader(4);
        let valuesArray = packedValues2.values;
        encode2(valuesArray);
        writeArrayHeader(0);
        writeArrayHeader(0);
        packedObjectMap = Object.create(sharedPackedObjectMap || null);
        for (let i = 0, l = valuesArray.length; i < l; i++) {
          packedObjectMap[valuesArray[i]] = i;
        }
      }
      if (sharedStructures) {
        targetView.setUint32(position2, 3655335424);
        position2 += 3;
        let definitions = sharedStructures.slice(0);
        definitions.unshift(57344);
        definitions.push(new Tag(sharedData.version, 1399353956));
        encode2(definitions);
      } else
        encode2(new Tag(sharedData.version, 1399353956));
    }
  }
];
function typedArrayEncoder(tag, size) {
  if (!isLittleEndianMachine2 && size > 1)
    tag -= 4;
  return {
    tag,
    encode: function writeExtBuffer(typedArray, encode2) {
      let length = typedArray.byteLength;
      let offset = typedArray.byteOffset || 0;
      let buffer = typedArray.buffer || typedArray;
      encode2(hasNodeBuffer ? Buffer2.from(buffer, offset, length) : new Uint8Array(buffer, offset, length));
    }
  };
}
function writeBuffer(buffer, makeRoom) {
  let length = buffer.byteLength;
  if (length < 24) {
    target[position2++] = 64 + length;
  } else if (length < 256) {
    target[position2++] = 88;
    target[position2++] = length;
  } else if (length < 65536) {
    target[position2++] = 89;
    target[position2++] = length >> 8;
    target[position2++] = length & 255;
  } else {
    target[position2++] = 90;
    targetView.setUint32(position2, length);
    position2 += 4;
  }
  if (position2 + length >= target.length) {
    makeRoom(position2 + length);
  }
  target.set(buffer.buffer ? buffer : new Uint8Array(buffer), position2);
  position2 += length;
}
function insertIds(serialized, idsToInsert) {
  let nextId;
  let distanceToMove = idsToInsert.length * 2;
  let lastEnd = serialized.length - distanceToMove;
  idsToInsert.sort((a, b) => a.offset > b.offset ? 1 : -1);
  for (let id = 0; id < idsToInsert.length; id++) {
    let referee = idsToInsert[id];
    referee.id = id;
    for (let position3 of referee.references) {
      serialized[position3++] = id >> 8;
      serialized[position3] = id & 255;
    }
  }
  while (nextId = idsToInsert.pop()) {
    let offset = nextId.offset;
    serialized.copyWithin(offset + distanceToMove, offset, lastEnd);
    distanceToMove -= 2;
    let position3 = offset + distanceToMove;
    serialized[position3++] = 216;
    serialized[position3++] = 28;
    lastEnd = offset;
  }
  return serialized;
}
function writeBundles(start, encode2) {
  targetView.setUint32(bundledStrings2.position + start, position2 - bundledStrings2.position - start + 1);
  let writeStrings = bundledStrings2;
  bundledStrings2 = null;
  encode2(writeStrings[0]);
  encode2(writeStrings[1]);
}
var defaultEncoder = new Encoder({ useRecords: false });
var encode = defaultEncoder.encode;
var encodeAsIterable = defaultEncoder.encodeAsIterable;
var encodeAsAsyncIterable = defaultEncoder.encodeAsAsyncIterable;
var { NEVER, ALWAYS, DECIMAL_ROUND, DECIMAL_FIT } = FLOAT32_OPTIONS;
var REUSE_BUFFER_MODE = 512;
var RESET_BUFFER_MODE = 1024;
var THROW_ON_ITERABLE = 2048;

// src/index.js
var cbor = new Encoder({ useRecords: false, mapsAsObjects: true, tagUint8Array: false, largeBigIntToFloat: false });
var utf8 = new TextEncoder();
var fromUTF8 = new TextDecoder("utf-8", { fatal: true });
var FRAME_HEADER = 4;
var STREAM_HEADER = 8;
var DATAGRAM_HEADER = 6;
var CHANNEL = Object.freeze({ PROGRESS: 1, AUDIO: 2, LOG: 3 });
var DEFAULT_INLINE_LIMIT = 8 << 20;
var DEFAULT_READ_RESOURCE_LIMIT = 16 << 20;
var DEFAULT_UNREAD_STREAM_TIMEOUT_MS = 1e4;
var DEFAULT_STREAM_WAIT_MS = 1e4;
var STREAM_ERROR_WAIT_MS = 100;
var SHUTDOWN_WAIT_MS = 3e3;
var STREAM_URI_PREFIX = "mcp-flow://stream/";
var CODE = Object.freeze({
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  INVALID_STREAM_REF: -32001,
  RESOURCE_NOT_FOUND: -32002,
  CANCELLED: -32800,
  TOO_LARGE: -32801
});
var MCPFlowError = class extends Error {
  constructor(message, { code, cause, requestId, streamTag } = {}) {
    super(message, cause ? { cause } : void 0);
    this.name = "MCPFlowError";
    if (code !== void 0) this.code = code;
    if (requestId !== void 0) this.requestId = requestId;
    if (streamTag !== void 0) this.streamTag = streamTag;
  }
};
function hexToBytes(s) {
  const clean = s.replace(/[^0-9a-fA-F]/g, "");
  if (clean.length !== 64) throw new MCPFlowError(`a certificate hash is 32 bytes (64 hex digits), got ${JSON.stringify(s)}`);
  return Uint8Array.from(clean.match(/../g), (h) => parseInt(h, 16));
}
function base64ToBytes(s) {
  const bin = atob(s);
  const b = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) b[i] = bin.charCodeAt(i);
  return b;
}
function bytesToBase64(b) {
  let s = "";
  for (let i = 0; i < b.length; i += 32768) s += String.fromCharCode.apply(null, b.subarray(i, i + 32768));
  return btoa(s);
}
function certHashes(list) {
  if (list === void 0 || list === null) return void 0;
  if (!Array.isArray(list)) list = [list];
  return list.map((h) => {
    if (h && typeof h === "object" && "algorithm" in h) return h;
    let value = h;
    if (typeof h === "string") value = /^[0-9a-fA-F:]{64,95}$/.test(h) ? hexToBytes(h) : base64ToBytes(h);
    if (!(value instanceof Uint8Array) || value.length !== 32) throw new MCPFlowError("serverCertificateHashes: each hash is a SHA-256 (32 bytes; hex, base64 or bytes)");
    return { algorithm: "sha-256", value };
  });
}
function concat(chunks, total) {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}
function deferred() {
  let resolve, reject;
  const promise = new Promise((a, b) => {
    resolve = a;
    reject = b;
  });
  promise.catch(() => {
  });
  return { promise, resolve, reject };
}
var ByteReader = class {
  constructor(readable) {
    this.reader = readable.getReader();
    this.chunks = [];
    this.size = 0;
  }
  // readExact returns n bytes, or null at a clean end before them.
  async readExact(n) {
    while (this.size < n) {
      const { value, done } = await this.reader.read();
      if (done) return null;
      this.chunks.push(value);
      this.size += value.length;
    }
    const all = concat(this.chunks, this.size);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.size = rest.length;
    return out;
  }
  // read returns the next chunk as ReadableStreamDefaultReader.read does.
  read() {
    if (this.chunks.length) {
      const value = this.chunks.shift();
      this.size -= value.length;
      return Promise.resolve({ value, done: false });
    }
    return this.reader.read();
  }
  // cancel stops reading: STOP_SENDING for a WebTransport stream.
  cancel(reason) {
    this.chunks = [];
    this.size = 0;
    return this.reader.cancel(reason).catch(() => {
    });
  }
};
function fromCBOR(v) {
  if (v instanceof Uint8Array) return bytesToBase64(v);
  if (v instanceof Tag) {
    if (v.value instanceof Uint8Array) {
      if (v.tag === 21) return bytesToBase64(v.value).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
      if (v.tag === 23) return Array.from(v.value, (b) => b.toString(16).padStart(2, "0")).join("");
      return bytesToBase64(v.value);
    }
    return fromCBOR(v.value);
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = fromCBOR(v[i]);
    return v;
  }
  if (v && typeof v === "object") {
    for (const k of Object.keys(v)) v[k] = fromCBOR(v[k]);
    return v;
  }
  return v;
}
function binaryOf(v) {
  if (v instanceof Tag) v = v.value;
  if (v instanceof Uint8Array) return v.slice();
  if (typeof v === "string") {
    try {
      return base64ToBytes(v);
    } catch {
      return void 0;
    }
  }
  return void 0;
}
function jsonShape(v) {
  if (Array.isArray(v)) return v.map((x) => x === void 0 ? null : jsonShape(x));
  if (v && typeof v === "object" && !(v instanceof Uint8Array)) {
    if (typeof v.toJSON === "function") return jsonShape(v.toJSON());
    const o = {};
    for (const k of Object.keys(v)) if (v[k] !== void 0 && typeof v[k] !== "function") o[k] = jsonShape(v[k]);
    return o;
  }
  return v;
}
function isText(mime) {
  return !!mime && (mime.startsWith("text/") || mime.startsWith("application/json"));
}
function streamKey(requestId, tag) {
  return `${requestId}/${tag}`;
}
function streamURI(requestId, tag) {
  return `${STREAM_URI_PREFIX}${requestId}/${tag}`;
}
function parseStreamURI(uri) {
  if (typeof uri !== "string" || !uri.startsWith(STREAM_URI_PREFIX)) return void 0;
  const m = uri.slice(STREAM_URI_PREFIX.length).match(/^(\d+)\/(\d+)$/);
  return m ? { requestId: Number(m[1]), tag: Number(m[2]) } : void 0;
}
function finite(ms) {
  return typeof ms === "number" && ms > 0 && Number.isFinite(ms);
}
var ExecStream = class {
  constructor(t, requestId, tag) {
    this.t = t;
    this.requestId = requestId;
    this.tag = tag;
    this.key = streamKey(requestId, tag);
    this.uri = streamURI(requestId, tag);
    this.mimeType = void 0;
    this.named = false;
    this.owner = null;
    this.reader = null;
    this.head = [];
    this.headBytes = 0;
    this.ended = false;
    this.error = null;
    this.reason = void 0;
    this.arrived = deferred();
    this.failed = deferred();
    this.noted = deferred();
    this.timers = {};
  }
  describe() {
    return `execution stream ${this.tag} of request ${this.requestId}`;
  }
  // arrive hands over the network's reader; false if the stream is not wanted.
  arrive(reader) {
    if (this.reader || this.error) return false;
    this.reader = reader;
    this.clearTimer("wait");
    this.arrived.resolve();
    return true;
  }
  // note records the server's $/streamError (spec §5.4): the stream fails at once.
  note(reason) {
    this.reason = reason;
    this.noted.resolve();
    this.fail(new MCPFlowError(`MCP-Flow: ${this.describe()} failed: ${reason}`, { code: CODE.INTERNAL, requestId: this.requestId, streamTag: this.tag }));
  }
  // fail ends the stream with err: a reader waiting for it gets err, and the
  // network stream, if it came, is cancelled (STOP_SENDING). Bytes read
  // ahead are dropped: a truncated payload is never handed over.
  fail(err) {
    if (this.error || this.ended) return false;
    this.error = err;
    this.head = [];
    this.headBytes = 0;
    this.clearTimer("wait");
    this.clearTimer("unread");
    this.arrived.reject(err);
    this.failed.reject(err);
    if (this.reader) this.reader.cancel(err);
    return true;
  }
  setTimer(name, ms, fn) {
    this.clearTimer(name);
    if (finite(ms)) this.timers[name] = setTimeout(fn, ms);
  }
  clearTimer(name) {
    clearTimeout(this.timers[name]);
    delete this.timers[name];
  }
  // pull returns the next chunk from the network, counted once in
  // stats.streamBytes; it throws this.error once the stream has failed,
  // whatever the network still holds.
  async pull() {
    if (this.error) throw this.error;
    if (this.ended) return { value: void 0, done: true };
    if (!this.reader) await this.arrived.promise;
    let r;
    try {
      r = await Promise.race([this.reader.read(), this.failed.promise]);
    } catch (e) {
      if (!this.error) await this.resetError(e);
      throw this.error;
    }
    if (this.error) throw this.error;
    if (r.done) {
      this.ended = true;
      return r;
    }
    this.t.stats.streamBytes += r.value.length;
    return r;
  }
  // next returns the bytes read ahead first, then pull()'s.
  next() {
    if (this.head.length && !this.error) {
      const value = this.head.shift();
      this.headBytes -= value.length;
      return Promise.resolve({ value, done: false });
    }
    return this.pull();
  }
  // readAhead reads into head until the end (true) or past limit bytes (false).
  async readAhead(limit) {
    for (; ; ) {
      const { value, done } = await this.pull();
      if (done) return true;
      this.head.push(value);
      this.headBytes += value.length;
      if (this.headBytes > limit) return false;
    }
  }
  // takeHead returns the bytes read ahead, as one array.
  takeHead() {
    const b = concat(this.head, this.headBytes);
    this.head = [];
    this.headBytes = 0;
    return b;
  }
  // resetError turns a reset of the network stream into this.error: the
  // reason of its $/streamError, which may trail the reset a moment on the
  // control stream, else the reset code.
  async resetError(e) {
    const code = e && typeof e.streamErrorCode === "number" ? e.streamErrorCode : void 0;
    if (this.reason === void 0 && (code === void 0 || code === -CODE.INTERNAL)) {
      let timer;
      await Promise.race([this.noted.promise, new Promise((r) => {
        timer = setTimeout(r, STREAM_ERROR_WAIT_MS);
      })]);
      clearTimeout(timer);
    }
    if (this.error) return;
    const why = this.reason !== void 0 ? this.reason : code !== void 0 ? `reset with code ${code}` : e && e.message || String(e);
    this.t.stats.streamsFailed++;
    this.fail(new MCPFlowError(`MCP-Flow: ${this.describe()} failed: ${why}`, { code: code !== void 0 ? -code : CODE.INTERNAL, requestId: this.requestId, streamTag: this.tag, cause: e }));
  }
};
var WebTransportClientTransport = class {
  constructor(url, options = {}) {
    this.url = String(url);
    this.options = options;
    this._hashes = certHashes(options.serverCertificateHashes);
    this.encodings = options.encodings || ["cbor", "json"];
    this.inlineLimit = options.inlineLimit ?? DEFAULT_INLINE_LIMIT;
    this.readResourceLimit = options.readResourceLimit ?? DEFAULT_READ_RESOURCE_LIMIT;
    this.unreadStreamTimeout = options.unreadStreamTimeout ?? DEFAULT_UNREAD_STREAM_TIMEOUT_MS;
    this.streamWait = options.streamWait ?? DEFAULT_STREAM_WAIT_MS;
    this._WebTransport = options.WebTransport || globalThis.WebTransport;
    this.encoding = "json";
    this.serverTransport = void 0;
    this.stats = {
      framesSent: 0,
      framesReceived: 0,
      bytesSent: 0,
      bytesReceived: 0,
      datagramsReceived: 0,
      progressDelivered: 0,
      progressStale: 0,
      streamsReceived: 0,
      streamBytes: 0,
      streamsFailed: 0,
      streamsReleased: 0,
      audioDatagrams: 0,
      audioBytes: 0,
      logDatagrams: 0
    };
    this.onframe = void 0;
    this.ondatagram = void 0;
    this.onaudio = void 0;
    this.onlog = void 0;
    this._initId = void 0;
    this._requests = /* @__PURE__ */ new Map();
    this._resolving = /* @__PURE__ */ new Set();
    this._cancelled = /* @__PURE__ */ new Set();
    this._localReads = /* @__PURE__ */ new Map();
    this._lastProgress = /* @__PURE__ */ new Map();
    this._streams = /* @__PURE__ */ new Map();
    this._gone = /* @__PURE__ */ new Map();
    this._closed = false;
  }
  /** start opens the WebTransport session and the control stream (called by the SDK's connect). */
  async start() {
    if (this._wt) throw new MCPFlowError("WebTransportClientTransport already started");
    if (!this._WebTransport) throw new MCPFlowError("this environment has no WebTransport");
    const opts = {};
    if (this._hashes) opts.serverCertificateHashes = this._hashes;
    this._wt = new this._WebTransport(this.url, opts);
    try {
      await this._wt.ready;
    } catch (e) {
      const why = this._hashes ? "is the server up, and does its certificate match serverCertificateHashes (ECDSA P-256, valid under 14 days)?" : "is the server up, and is its certificate trusted (or pass serverCertificateHashes)?";
      throw new MCPFlowError(`MCP-Flow: cannot open a WebTransport session to ${this.url}: ${e && e.message || e}; ${why}`, { cause: e });
    }
    const ctrl = await this._wt.createBidirectionalStream();
    this._writer = ctrl.writable.getWriter();
    this._reader = new ByteReader(ctrl.readable);
    this._controlDone = this._readLoop();
    this._acceptStreams();
    this._readDatagrams();
    this._wt.closed.then(() => this._finish(), (e) => this._finish(e));
  }
  _encode(msg) {
    return this.encoding === "cbor" ? cbor.encode(jsonShape(msg)) : utf8.encode(JSON.stringify(msg));
  }
  // _decodeRaw decodes a frame or datagram payload, leaving CBOR's byte strings as they are.
  _decodeRaw(bytes) {
    if (this.encoding === "cbor") return decode(bytes);
    return JSON.parse(fromUTF8.decode(bytes));
  }
  _decode(bytes) {
    const v = this._decodeRaw(bytes);
    return this.encoding === "cbor" ? fromCBOR(v) : v;
  }
  async _writeFrame(msg) {
    const body = this._encode(msg);
    const frame = new Uint8Array(FRAME_HEADER + body.length);
    new DataView(frame.buffer).setUint32(0, body.length, false);
    frame.set(body, FRAME_HEADER);
    this.stats.framesSent++;
    this.stats.bytesSent += frame.length;
    if (this.onframe) this.onframe("out", msg, frame.length, this.encoding);
    await this._writer.write(frame);
  }
  /**
   * send passes one JSON-RPC message of the SDK's to the server. initialize
   * gains the transport object (§4.1); notifications/cancelled becomes
   * $/cancel (§7.1); resources/read of an mcp-flow://stream/ URI is
   * answered here, from the execution stream.
   */
  async send(message) {
    if (this._closed) throw new MCPFlowError("MCP-Flow session closed");
    let msg = message;
    if (msg.method === "resources/read" && msg.id !== void 0 && msg.params && parseStreamURI(msg.params.uri)) {
      this._readResource(msg);
      return;
    }
    if (msg.method === "initialize" && msg.id !== void 0) {
      this._initId = msg.id;
      msg = { ...msg, params: { ...msg.params || {}, transport: { type: "mcp-flow", version: "0.1", encodings: this.encodings } } };
    } else if (msg.method === "notifications/cancelled" || msg.method === "$/cancel") {
      const p = msg.params || {};
      const key = String(p.requestId);
      const local = this._localReads.get(key);
      if (local) {
        this._localReads.delete(key);
        this._release(local, `${local.describe()}: its resources/read was cancelled`, CODE.CANCELLED);
        return;
      }
      if (msg.method === "notifications/cancelled" && (this._requests.has(key) || this._resolving.has(key))) this._cancelled.add(key);
      const req = this._requests.get(key);
      if (req) req.progressToken = void 0;
      this._releaseRequest(p.requestId, `request ${p.requestId} was cancelled`);
      msg = { jsonrpc: "2.0", method: "$/cancel", params: { requestId: p.requestId, reason: p.reason || "cancelled by the client" } };
    }
    if (msg.method !== void 0 && msg.id !== void 0) {
      const id = msg.id;
      if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > 4294967295) {
        throw new MCPFlowError(`MCP-Flow request ids are integers in [0, 2^32-1] (spec \xA73.2); the SDK sent ${JSON.stringify(id)}`);
      }
      this._requests.set(String(id), { progressToken: msg.params && msg.params._meta && msg.params._meta.progressToken });
    }
    await this._writeFrame(msg);
  }
  async _readFrame() {
    const hdr = await this._reader.readExact(FRAME_HEADER);
    if (!hdr) return null;
    const n = new DataView(hdr.buffer, hdr.byteOffset).getUint32(0, false);
    const max = this.serverTransport && this.serverTransport.maxFrameSize || 16 << 20;
    if (n === 0 || n > max) throw new MCPFlowError(`control frame of ${n} bytes (limit ${max}; spec \xA73.1)`, { code: -32600 });
    const body = await this._reader.readExact(n);
    if (!body) throw new MCPFlowError("control stream ended inside a frame");
    this.stats.framesReceived++;
    this.stats.bytesReceived += FRAME_HEADER + n;
    return body;
  }
  async _readLoop() {
    try {
      for (; ; ) {
        const frame = await this._readFrame();
        if (!frame) break;
        const msg = this._decode(frame);
        if (this.onframe) this.onframe("in", msg, FRAME_HEADER + frame.length, this.encoding);
        for (const m of Array.isArray(msg) ? msg : [msg]) this._dispatch(m);
      }
    } catch (e) {
      if (!this._closed) this._error(e instanceof MCPFlowError ? e : new MCPFlowError("control stream: " + (e && e.message || e), { cause: e }));
    }
    if (!this._closed && this._shutdownReceived) this.close();
  }
  _dispatch(m) {
    if (m.method === "$/shutdown") {
      this._shutdownReceived = true;
      return;
    }
    if (m.method === "$/streamError") {
      this._streamError(m.params || {});
      return;
    }
    if (m.method === "notifications/progress") {
      this._progress(m.params);
      return;
    }
    if (m.method === "notifications/message") this._log(m.params, void 0, false);
    if (m.method !== void 0) {
      this._deliver(m);
      return;
    }
    const key = String(m.id);
    if (m.id !== void 0 && m.id !== null && this._initId !== void 0 && key === String(this._initId) && m.result) {
      this.serverTransport = m.result.transport;
      if (this.serverTransport && this.serverTransport.encoding) this.encoding = this.serverTransport.encoding;
      this._initId = void 0;
    }
    const req = this._requests.get(key);
    this._requests.delete(key);
    if (req && req.progressToken !== void 0) this._lastProgress.delete(String(req.progressToken));
    const refs = m.result && Array.isArray(m.result.content) ? m.result.content.filter((c) => c && c.type === "ref/stream") : [];
    if (typeof m.id === "number") {
      const named = new Set(refs.map((c) => streamKey(m.id, c.streamTag)));
      for (const s of this._streamsOf(m.id)) if (!named.has(s.key) && !s.named) this._release(s, `${s.describe()}: the result names no such stream`, CODE.INVALID_STREAM_REF);
    }
    if (this._cancelled.delete(key)) {
      this._releaseRequest(m.id, `request ${m.id} was cancelled`);
      return;
    }
    if (refs.length === 0) {
      this._deliver(m);
      return;
    }
    const streams = refs.map((c) => {
      const s = this._stream(m.id, c.streamTag);
      s.named = true;
      s.mimeType = c.mimeType;
      if (!s.reader && !s.error) {
        s.setTimer("wait", this.streamWait, () => {
          if (s.reader || s.error) return;
          this.stats.streamsFailed++;
          this._fail(s, new MCPFlowError(`MCP-Flow: no execution stream arrived for ref/stream tag ${s.tag} of request ${s.requestId} within ${this.streamWait} ms (spec \xA75.3)`, { code: CODE.INVALID_STREAM_REF, requestId: s.requestId, streamTag: s.tag }));
        });
      }
      return s;
    });
    this._resolving.add(key);
    this._resolveStreams(m, streams).then((r) => {
      this._resolving.delete(key);
      if (this._cancelled.delete(key)) {
        this._releaseRequest(m.id, `request ${m.id} was cancelled`);
        return;
      }
      this._deliver(r);
      for (const s of streams) if (this._streams.get(s.key) === s && !s.owner) this._armUnread(s);
    });
  }
  // _stream returns the ExecStream of (requestId, tag), making it.
  _stream(requestId, tag) {
    const key = streamKey(requestId, tag);
    let s = this._streams.get(key);
    if (!s) {
      s = new ExecStream(this, requestId, tag);
      this._streams.set(key, s);
      this._gone.delete(key);
    }
    return s;
  }
  _streamsOf(requestId) {
    return [...this._streams.values()].filter((s) => s.requestId === Number(requestId));
  }
  // _forget drops a stream that is done with, remembering why for stream()'s error.
  _forget(s, why) {
    if (this._streams.get(s.key) !== s) return;
    this._streams.delete(s.key);
    s.clearTimer("wait");
    s.clearTimer("unread");
    this._gone.set(s.key, why);
    if (this._gone.size > 1024) this._gone.delete(this._gone.keys().next().value);
  }
  // _fail fails a stream; one nobody reads is forgotten at once, one being
  // read when its reader has seen the error.
  _fail(s, err) {
    s.fail(err);
    if (!s.owner && !s.named) this._forget(s, err.message);
  }
  // _release gives up a stream on our side: it is cancelled (STOP_SENDING)
  // and forgotten, so that its bytes no longer hold the connection's window.
  _release(s, why, code) {
    if (s.fail(new MCPFlowError(`MCP-Flow: ${why}`, { code, requestId: s.requestId, streamTag: s.tag }))) this.stats.streamsReleased++;
    if (!s.owner || s.owner === "inline") this._forget(s, why);
  }
  _releaseRequest(requestId, why) {
    for (const s of this._streamsOf(requestId)) this._release(s, `${s.describe()}: ${why}`, CODE.CANCELLED);
  }
  // _armUnread cancels a stream handed over as a resource_link that nobody
  // opens within unreadStreamTimeout: unread, it would hold the
  // connection's flow-control window that later streams need.
  _armUnread(s) {
    s.setTimer("unread", this.unreadStreamTimeout, () => {
      if (s.owner) return;
      if (s.error) {
        this._forget(s, s.error.message);
        return;
      }
      this._release(s, `${s.describe()} (${s.uri}) was not opened within unreadStreamTimeout (${this.unreadStreamTimeout} ms) after its result was handed over, and was cancelled`, CODE.CANCELLED);
    });
  }
  // _streamError handles $/streamError {requestId, streamTag, error} (spec §5.4).
  _streamError(p) {
    const key = streamKey(p.requestId, p.streamTag);
    let s = this._streams.get(key);
    if (!s && this._requests.has(String(p.requestId))) s = this._stream(p.requestId, p.streamTag);
    if (!s || s.error || s.ended) return;
    this.stats.streamsFailed++;
    const e = p.error;
    s.note(typeof e === "string" ? e : e && e.message || JSON.stringify(e));
  }
  // _resolveStreams replaces each ref/stream block, reading the streams
  // side by side: streams of at most inlineLimit bytes become text (text/*
  // or JSON that is UTF-8) or a resource with a base64 blob, as the stdio
  // front does (spec §10); larger ones a resource_link to streamURI(id,
  // tag), read with stream() or resources/read, their first bytes kept. A
  // stream that fails fails the call (-32603; as the bridges do), at once.
  async _resolveStreams(m, streams) {
    const inline = this.options.inlineStreams !== false;
    const whole = /* @__PURE__ */ new Map();
    try {
      if (inline) {
        for (const s of streams) s.owner = "inline";
        await Promise.all(streams.map(async (s) => {
          if (await s.readAhead(this.inlineLimit)) whole.set(s, s.takeHead());
        }));
        for (const s of streams) s.owner = null;
      }
    } catch (e) {
      for (const s of streams) {
        s.owner = null;
        this._release(s, `${s.describe()}: another stream of its result failed`, CODE.INTERNAL);
      }
      const code = e.code === CODE.CANCELLED || e.code === CODE.INVALID_STREAM_REF ? e.code : CODE.INTERNAL;
      return { jsonrpc: "2.0", id: m.id, error: { code, message: e.message, data: { requestId: e.requestId, streamTag: e.streamTag } } };
    }
    const byTag = new Map(streams.map((s) => [s.tag, s]));
    const content = m.result.content.map((c) => {
      if (!c || c.type !== "ref/stream") return c;
      const s = byTag.get(c.streamTag);
      if (!whole.has(s)) return { type: "resource_link", uri: s.uri, name: `stream ${c.streamTag}`, mimeType: c.mimeType };
      const bytes = whole.get(s);
      this._forget(s, `${s.describe()} was inlined into its result`);
      return contentOf(s, bytes, "content");
    });
    return { ...m, result: { ...m.result, content } };
  }
  /**
   * stream returns the raw bytes of execution stream `tag` of request
   * `requestId` (or of a resource_link's streamURI) as a ReadableStream,
   * once. The stream pulls from the network only as it is read. It errors
   * with an MCPFlowError naming the request and tag when the stream fails
   * ($/streamError, a reset, or no stream within streamWait): a truncated
   * payload never ends cleanly. The promise rejects when there is no such
   * stream to take (read already, inlined, released, or never named).
   */
  stream(requestId, tag) {
    const u = parseStreamURI(requestId);
    if (u) ({ requestId, tag } = u);
    requestId = Number(requestId);
    tag = Number(tag);
    const key = streamKey(requestId, tag);
    let s = this._streams.get(key);
    if (!s && this._requests.has(String(requestId))) s = this._stream(requestId, tag);
    if (!s) return Promise.reject(new MCPFlowError(`MCP-Flow: no execution stream ${streamURI(requestId, tag)} to read: ${this._gone.get(key) || "no result of this session names it"}`, { code: CODE.RESOURCE_NOT_FOUND, requestId, streamTag: tag }));
    if (s.owner) return Promise.reject(new MCPFlowError(`MCP-Flow: ${s.describe()} is being read already (${s.owner === "resource" ? "by resources/read" : "by stream()"})`, { code: CODE.INVALID_PARAMS, requestId, streamTag: tag }));
    s.owner = "stream";
    s.clearTimer("unread");
    const self = this;
    return Promise.resolve(new ReadableStream({
      async pull(ctl) {
        let r;
        try {
          r = await s.next();
        } catch (e) {
          self._forget(s, e.message);
          ctl.error(e);
          return;
        }
        if (r.done) {
          self._forget(s, `${s.describe()} was read to its end`);
          ctl.close();
        } else ctl.enqueue(r.value);
      },
      cancel(reason) {
        s.owner = null;
        self._release(s, `${s.describe()} was cancelled by its reader${reason !== void 0 ? ": " + (reason && reason.message || reason) : ""}`, CODE.CANCELLED);
      }
    }, { highWaterMark: 0 }));
  }
  // _readResource answers resources/read of a streamURI from the stream:
  // {contents: [{uri, mimeType, text | blob}]}, up to readResourceLimit
  // bytes; past it -32801, and the stream stays for stream(), none of its
  // bytes lost.
  async _readResource(msg) {
    const uri = msg.params.uri;
    const { requestId, tag } = parseStreamURI(uri);
    const key = streamKey(requestId, tag);
    const id = String(msg.id);
    const answer = (body) => this._deliver({ jsonrpc: "2.0", id: msg.id, ...body });
    const s = this._streams.get(key);
    if (!s || !s.named) {
      answer({ error: { code: CODE.RESOURCE_NOT_FOUND, message: `Resource not found: ${uri}: ${this._gone.get(key) || "no result of this session names it"}`, data: { uri } } });
      return;
    }
    if (s.owner) {
      answer({ error: { code: CODE.INVALID_PARAMS, message: `MCP-Flow: ${s.describe()} is being read already`, data: { uri } } });
      return;
    }
    s.owner = "resource";
    s.clearTimer("unread");
    this._localReads.set(id, s);
    let complete, err;
    try {
      complete = await s.readAhead(this.readResourceLimit);
    } catch (e) {
      err = e;
    }
    s.owner = null;
    const cancelled = this._localReads.get(id) !== s;
    this._localReads.delete(id);
    if (err) {
      this._forget(s, err.message);
      if (!cancelled) answer({ error: { code: err.code === CODE.CANCELLED || err.code === CODE.INVALID_STREAM_REF ? err.code : CODE.INTERNAL, message: err.message, data: { uri } } });
      return;
    }
    if (!complete) {
      this._armUnread(s);
      if (!cancelled) answer({ error: { code: CODE.TOO_LARGE, message: `MCP-Flow: ${s.describe()} is larger than readResourceLimit (${this.readResourceLimit} bytes): read it with transport.stream('${uri}'), which streams it with backpressure`, data: { uri, readResourceLimit: this.readResourceLimit } } });
      return;
    }
    const bytes = s.takeHead();
    this._forget(s, `${s.describe()} was read by resources/read`);
    if (!cancelled) answer({ result: { contents: [contentOf(s, bytes, "resource")] } });
  }
  async _acceptStreams() {
    const r = this._wt.incomingUnidirectionalStreams.getReader();
    for (; ; ) {
      const { value, done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      (async () => {
        const br = new ByteReader(value);
        const hdr = await br.readExact(STREAM_HEADER).catch(() => null);
        if (!hdr) {
          br.cancel();
          return;
        }
        const dv = new DataView(hdr.buffer, hdr.byteOffset);
        const requestId = dv.getUint32(0, false);
        const tag = dv.getUint32(4, false);
        this.stats.streamsReceived++;
        let s = this._streams.get(streamKey(requestId, tag));
        if (!s && this._requests.has(String(requestId))) s = this._stream(requestId, tag);
        if (!s || !s.arrive(br)) br.cancel();
      })();
    }
  }
  async _readDatagrams() {
    const r = this._wt.datagrams.readable.getReader();
    for (; ; ) {
      const { value, done } = await r.read().catch(() => ({ done: true }));
      if (done) return;
      this.stats.datagramsReceived++;
      if (value.length < DATAGRAM_HEADER) continue;
      const channel = value[0];
      const requestId = new DataView(value.buffer, value.byteOffset).getUint32(2, false);
      let raw;
      try {
        raw = this._decodeRaw(value.subarray(DATAGRAM_HEADER));
      } catch {
        continue;
      }
      try {
        this._datagram(channel, requestId, raw);
      } catch (e) {
        this._error(e);
      }
    }
  }
  _datagram(channel, requestId, raw) {
    if (channel === CHANNEL.AUDIO) {
      const data = raw && binaryOf(raw.data);
      if (!data) return;
      this.stats.audioDatagrams++;
      this.stats.audioBytes += data.length;
      const chunk = { requestId, seq: raw.seq, data };
      if (this.ondatagram) this.ondatagram(channel, requestId, { seq: raw.seq, data });
      if (this.onaudio) this.onaudio(chunk);
      return;
    }
    if (channel !== CHANNEL.PROGRESS && channel !== CHANNEL.LOG) return;
    const payload = this.encoding === "cbor" ? fromCBOR(raw) : raw;
    if (this.ondatagram) this.ondatagram(channel, requestId, payload);
    if (channel === CHANNEL.PROGRESS) {
      this._progress(payload);
      return;
    }
    if (!payload || typeof payload !== "object") return;
    this.stats.logDatagrams++;
    this._log(payload, requestId, true);
    this._deliver({ jsonrpc: "2.0", method: "notifications/message", params: payload });
  }
  _log(p, requestId, datagram) {
    if (!this.onlog || !p) return;
    try {
      this.onlog({ requestId, level: p.level, logger: p.logger, data: p.data, datagram });
    } catch (e) {
      this._error(e);
    }
  }
  // _progress delivers a progress update as notifications/progress, never
  // backwards (spec §6.2: a datagram overtaken, or the control-stream twin).
  _progress(p) {
    if (!p || p.progressToken === void 0) return;
    const key = String(p.progressToken);
    if (!this._tokenLive(key)) {
      this.stats.progressStale++;
      return;
    }
    const last = this._lastProgress.get(key);
    if (last !== void 0 && !(p.progress > last)) {
      this.stats.progressStale++;
      return;
    }
    this._lastProgress.set(key, p.progress);
    this.stats.progressDelivered++;
    this._deliver({ jsonrpc: "2.0", method: "notifications/progress", params: p });
  }
  // _tokenLive reports whether a request in flight carries the progress
  // token key (and its caller has not cancelled it).
  _tokenLive(key) {
    for (const r of this._requests.values()) if (r.progressToken !== void 0 && String(r.progressToken) === key) return true;
    return false;
  }
  _deliver(m) {
    if (this.onmessage) {
      try {
        this.onmessage(m);
      } catch (e) {
        this._error(e);
      }
    }
  }
  _error(e) {
    if (this.onerror) this.onerror(e);
  }
  /**
   * close ends the session gracefully (spec §7.2). Execution streams that
   * nobody has opened are cancelled first: the server's drain waits for
   * every stream it writes, and nobody would read these. Then $/shutdown,
   * the server's FIN on the control stream (at once when nothing is in
   * flight; at most SHUTDOWN_WAIT_MS), our FIN, and the WebTransport close.
   * onclose follows.
   */
  async close() {
    if (this._closed) return;
    this._closed = true;
    for (const s of [...this._streams.values()]) if (s.named && !s.owner) this._release(s, `${s.describe()}: the client closed the session before it was read`, CODE.CANCELLED);
    if (this._writer) {
      try {
        if (!this._shutdownReceived) await this._writeFrame({ jsonrpc: "2.0", method: "$/shutdown", params: { reason: "client closed" } });
        let timer;
        await Promise.race([this._controlDone, new Promise((r) => {
          timer = setTimeout(r, SHUTDOWN_WAIT_MS);
        })]);
        clearTimeout(timer);
        await this._writer.close().catch(() => {
        });
      } catch {
      }
    }
    try {
      this._wt && this._wt.close({ closeCode: 0, reason: "done" });
    } catch {
    }
    this._finish();
  }
  _finish(err) {
    if (this._ended) return;
    this._ended = true;
    this._closed = true;
    const gone = new MCPFlowError("MCP-Flow session ended" + (err ? ": " + (err.message || err) : ""), { cause: err });
    for (const s of [...this._streams.values()]) {
      s.fail(gone);
      s.clearTimer("wait");
      s.clearTimer("unread");
    }
    if (err && this.onerror && !this._shutdownReceived) this._error(new MCPFlowError("MCP-Flow session lost: " + (err.message || err), { cause: err }));
    if (this.onclose) this.onclose();
  }
};
function contentOf(s, bytes, as) {
  let text;
  if (isText(s.mimeType)) {
    try {
      text = fromUTF8.decode(bytes);
    } catch {
      text = void 0;
    }
  }
  const resource = { uri: s.uri, mimeType: s.mimeType || "application/octet-stream" };
  if (as === "resource") return text !== void 0 ? { ...resource, text } : { ...resource, blob: bytesToBase64(bytes) };
  return text !== void 0 ? { type: "text", text } : { type: "resource", resource: { ...resource, blob: bytesToBase64(bytes) } };
}
export {
  CHANNEL,
  DATAGRAM_HEADER,
  DEFAULT_INLINE_LIMIT,
  DEFAULT_READ_RESOURCE_LIMIT,
  DEFAULT_STREAM_WAIT_MS,
  DEFAULT_UNREAD_STREAM_TIMEOUT_MS,
  FRAME_HEADER,
  MCPFlowError,
  SHUTDOWN_WAIT_MS,
  STREAM_ERROR_WAIT_MS,
  STREAM_HEADER,
  STREAM_URI_PREFIX,
  WebTransportClientTransport,
  bytesToBase64,
  streamURI
};
